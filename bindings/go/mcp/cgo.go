package mcp

// The cgo side: where libmcp and its header are (this repository's build/libmcp, made by
// `make libmcp`), and the C trampolines Go cannot write itself.

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include
#cgo LDFLAGS: -L${SRCDIR}/../../../build/libmcp -lmcp -Wl,-rpath,${SRCDIR}/../../../build/libmcp
#include <stdint.h>
#include <stdlib.h>
#include <mcp/mcp.h>

int goDelta(char *delta, size_t len, void *user_data);

static int delta_trampoline(const char *delta, size_t len, void *user_data) {
	return goDelta((char *)delta, len, user_data);
}

static mcp_status stream_prompt(mcp_model *model, const char *prompt, const mcp_infer_options *options,
                                uintptr_t handle, mcp_result **out) {
	return mcp_infer_stream(model, prompt, options, delta_trampoline, (void *)handle, out);
}

static mcp_status stream_chat(mcp_model *model, const mcp_message *messages, size_t num_messages,
                              const mcp_infer_options *options, uintptr_t handle, mcp_result **out) {
	return mcp_chat_stream(model, messages, num_messages, options, delta_trampoline, (void *)handle, out);
}
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// deltaSink receives a stream's deltas on the thread that runs the C call.
type deltaSink interface {
	// deliver hands one delta on; false cancels the request.
	deliver(delta string) bool
}

// callInput is what one inference call passes to C; free releases its C memory.
type callInput struct {
	prompt   *C.char
	messages []C.mcp_message
	options  C.mcp_infer_options
	cStrings []unsafe.Pointer
}

func (in *callInput) cString(s string) *C.char {
	p := C.CString(s)
	in.cStrings = append(in.cStrings, unsafe.Pointer(p))
	return p
}

func (in *callInput) free() {
	for _, p := range in.cStrings {
		C.free(p)
	}
	in.cStrings = nil
}

// run makes the C call: infer or chat, streamed to sink when it is not nil.
func (in *callInput) run(model *C.mcp_model, sink deltaSink) (*C.mcp_result, C.mcp_status) {
	var result *C.mcp_result
	var messages *C.mcp_message
	if len(in.messages) > 0 {
		messages = &in.messages[0]
	}
	count := C.size_t(len(in.messages))
	if sink == nil {
		if in.prompt != nil {
			return result, C.mcp_infer(model, in.prompt, &in.options, &result)
		}
		return result, C.mcp_chat(model, messages, count, &in.options, &result)
	}
	handle := cgo.NewHandle(sink)
	defer handle.Delete()
	if in.prompt != nil {
		return result, C.stream_prompt(model, in.prompt, &in.options, C.uintptr_t(handle), &result)
	}
	return result, C.stream_chat(model, messages, count, &in.options, C.uintptr_t(handle), &result)
}
