// Package mcp is the MCP 2026 runtime SDK for Go: the engine, scheduler and governance of the
// Python SDK, embedded through libmcp's C API (include/mcp/mcp.h).
//
//	session, err := mcp.NewSession("mcp-config.yaml")
//	model, err := session.LoadModel("smollm2-135m-instruct.mcp")
//	result, err := model.Infer(ctx, "Explain quantum entanglement.", mcp.MaxTokens(128), mcp.Temperature(0.7))
//	fmt.Println(result.Text)
//
// Every method is safe from many goroutines at once; concurrent calls on one model are batched
// together by its engine loop. Build libmcp first (`make libmcp`); the package links it from
// this repository's build/libmcp.
package mcp

// #include <stdlib.h>
// #include <mcp/mcp.h>
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// APIVersion is the C API version (major*10000 + minor*100 + patch) of the libmcp loaded.
func APIVersion() int { return int(C.mcp_api_version()) }

// Session owns a config and the models it loaded.
type Session struct {
	mu     sync.Mutex
	handle *C.mcp_session
}

// NewSession opens a session configured by an mcp-config.yaml; "" takes the defaults.
func NewSession(configPath string) (*Session, error) {
	var path *C.char
	if configPath != "" {
		path = C.CString(configPath)
		defer C.free(unsafe.Pointer(path))
	}
	runtime.LockOSThread() // the error message is the calling thread's
	defer runtime.UnlockOSThread()
	var handle *C.mcp_session
	if err := lastError(C.mcp_session_open(path, &handle)); err != nil {
		return nil, err
	}
	return &Session{handle: handle}, nil
}

// LoadModel loads a .mcp file (relative to the config's model_dir) or a catalog name.
func (s *Session) LoadModel(name string) (*Model, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handle == nil {
		return nil, &Error{Code: ErrInvalidRequest, Message: "the session is closed"}
	}
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var handle *C.mcp_model
	if err := lastError(C.mcp_model_load(s.handle, cName, &handle)); err != nil {
		return nil, err
	}
	return newModel(handle), nil
}

// Close unloads the session's models; their Model values then return errors (Unload them
// to free their handles). Closing twice is a no-op.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handle == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := lastError(C.mcp_session_close(s.handle))
	s.handle = nil
	return err
}
