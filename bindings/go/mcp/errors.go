package mcp

// #include <mcp/mcp.h>
import "C"

import "fmt"

// Code is the kind of an Error: one per class of the Python SDK's MCPError hierarchy
// (the C API's mcp_status).
type Code int

// The codes, equal to the C API's MCP_ERR_* values.
const (
	ErrMCP               Code = C.MCP_ERR_MCP
	ErrConfig            Code = C.MCP_ERR_CONFIG
	ErrModelNotFound     Code = C.MCP_ERR_MODEL_NOT_FOUND
	ErrModelFormat       Code = C.MCP_ERR_MODEL_FORMAT
	ErrUnsupportedModel  Code = C.MCP_ERR_UNSUPPORTED_MODEL
	ErrInvalidRequest    Code = C.MCP_ERR_INVALID_REQUEST
	ErrContextLength     Code = C.MCP_ERR_CONTEXT_LENGTH
	ErrDownload          Code = C.MCP_ERR_DOWNLOAD
	ErrCapacity          Code = C.MCP_ERR_CAPACITY
	ErrPolicyDenied      Code = C.MCP_ERR_POLICY_DENIED
	ErrEngine            Code = C.MCP_ERR_ENGINE
	ErrModelSignature    Code = C.MCP_ERR_MODEL_SIGNATURE
	ErrCancelled         Code = C.MCP_ERR_CANCELLED
	ErrWorkerUnavailable Code = C.MCP_ERR_WORKER_UNAVAILABLE
	ErrRuntime           Code = C.MCP_ERR_RUNTIME
	ErrInternal          Code = C.MCP_ERR_INTERNAL
	ErrArgument          Code = C.MCP_ERR_ARGUMENT
)

// String is the C name of the code, e.g. "MCP_ERR_CONFIG".
func (c Code) String() string {
	return C.GoString(C.mcp_status_name(C.mcp_status(c)))
}

// Error is every error this package returns from the runtime: errors.As(err, &*mcp.Error)
// gives its Code. An error caused by a context (cancelled, past its deadline) unwraps to the
// context's error, so errors.Is(err, context.DeadlineExceeded) holds.
type Error struct {
	Code    Code
	Message string
	cause   error
}

func (e *Error) Error() string { return fmt.Sprintf("mcp: %s: %s", e.Code, e.Message) }

// Unwrap gives the context error that caused a cancellation, or nil.
func (e *Error) Unwrap() error { return e.cause }

// lastError turns a failed C call's status and this thread's message into an *Error. It must
// run on the thread that made the call: callers keep the goroutine locked to its thread.
func lastError(status C.mcp_status) error {
	if status == C.MCP_OK {
		return nil
	}
	return &Error{Code: Code(status), Message: C.GoString(C.mcp_last_error())}
}
