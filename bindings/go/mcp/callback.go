package mcp

// #include <stddef.h>
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// goDelta is libmcp's stream callback: it hands the delta to the call's sink; a nonzero return
// cancels the request.
//
//export goDelta
func goDelta(delta *C.char, length C.size_t, userData unsafe.Pointer) C.int {
	sink := cgo.Handle(uintptr(userData)).Value().(deltaSink)
	if sink.deliver(C.GoStringN(delta, C.int(length))) {
		return 0
	}
	return 1
}
