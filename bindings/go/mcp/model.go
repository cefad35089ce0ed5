package mcp

// #include <mcp/mcp.h>
import "C"

import (
	"context"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Model is a loaded model. Its calls may come from many goroutines; they are batched together.
type Model struct {
	mu      sync.RWMutex // calls hold it shared, Unload exclusively
	handle  *C.mcp_model
	calls   sync.Mutex
	running map[*C.mcp_cancel]struct{} // cancel signals of the calls under way
	closing bool                       // Unload has begun: no new call starts
	unload  chan struct{}              // closed when Unload begins: streams stop handing out deltas
}

func newModel(handle *C.mcp_model) *Model {
	return &Model{handle: handle, running: map[*C.mcp_cancel]struct{}{}, unload: make(chan struct{})}
}

// Usage counts a result's tokens.
type Usage struct {
	PromptTokens, CompletionTokens, CachedTokens int
}

// Timings are seconds from submission; QueueS < 0 means it never left the queue.
type Timings struct {
	TTFT, TPOT, Total time.Duration
	QueueS            float64
}

// Result is the outcome of a call.
type Result struct {
	Text         string
	TokenIDs     []int32
	FinishReason string // "stop", "length", "cancelled" or "deadline"
	Usage        Usage
	Timings      Timings
}

// Stats are the model's engine loop counters; MaxSequencesInStep > 1 shows batching.
type Stats struct {
	NumSteps, MaxSequencesInStep, NumFinished, NumRunning, NumWaiting, NumPreemptions int64
}

// Infer completes a prompt. Cancelling ctx (or its deadline) ends the request at the engine's
// next step; the partial result comes back with an *Error of code ErrCancelled.
func (m *Model) Infer(ctx context.Context, prompt string, opts ...Option) (*Result, error) {
	return m.call(ctx, newCallInput(&prompt, nil, opts), nil)
}

// Chat answers a conversation through the model's chat template.
func (m *Model) Chat(ctx context.Context, messages []Message, opts ...Option) (*Result, error) {
	return m.call(ctx, newCallInput(nil, messages, opts), nil)
}

// Unload cancels the calls under way, waits for them, and frees the model. Later calls
// return an *Error of code ErrInvalidRequest. Unloading twice is a no-op.
func (m *Model) Unload() error {
	m.calls.Lock()
	if !m.closing {
		close(m.unload)
	}
	m.closing = true
	for cancel := range m.running {
		C.mcp_cancel_fire(cancel)
	}
	m.calls.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handle == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := lastError(C.mcp_model_unload(m.handle))
	m.handle = nil
	return err
}

// Stats reads the engine loop's counters.
func (m *Model) Stats() (Stats, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.handle == nil {
		return Stats{}, errUnloaded()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var s C.mcp_stats
	if err := lastError(C.mcp_model_stats(m.handle, &s)); err != nil {
		return Stats{}, err
	}
	return Stats{int64(s.num_steps), int64(s.max_sequences_in_step), int64(s.num_finished),
		int64(s.num_running), int64(s.num_waiting), int64(s.num_preemptions)}, nil
}

func errUnloaded() error {
	return &Error{Code: ErrInvalidRequest, Message: "the model has been unloaded; load it again"}
}

// call runs one request with a cancel signal that ctx and Unload fire.
func (m *Model) call(ctx context.Context, in *callInput, sink deltaSink) (*Result, error) {
	defer in.free()
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: ErrCancelled, Message: "the context ended before the call: " + err.Error(), cause: err}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.handle == nil {
		return nil, errUnloaded()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cancel, err := m.track()
	if err != nil {
		return nil, err
	}
	defer m.untrack(cancel)
	in.options.cancel = cancel
	stop := fireOnDone(ctx, cancel)
	result, status := in.run(m.handle, sink)
	stop()
	if err := lastError(status); err != nil {
		return nil, err
	}
	return finishResult(ctx, result)
}

func (m *Model) track() (*C.mcp_cancel, error) {
	var cancel *C.mcp_cancel
	if err := lastError(C.mcp_cancel_new(&cancel)); err != nil {
		return nil, err
	}
	m.calls.Lock()
	defer m.calls.Unlock()
	if m.closing {
		C.mcp_cancel_free(cancel)
		return nil, errUnloaded()
	}
	m.running[cancel] = struct{}{}
	return cancel, nil
}

func (m *Model) untrack(cancel *C.mcp_cancel) {
	m.calls.Lock()
	delete(m.running, cancel)
	m.calls.Unlock()
	C.mcp_cancel_free(cancel)
}

// fireOnDone fires cancel when ctx ends, until the returned stop is called.
func fireOnDone(ctx context.Context, cancel *C.mcp_cancel) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	finished := make(chan struct{})
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		select {
		case <-ctx.Done():
			C.mcp_cancel_fire(cancel)
		case <-finished:
		}
	}()
	return func() {
		close(finished)
		<-fired // never free the signal while it may still be fired
	}
}

// finishResult copies the C result; a context that ended makes it an ErrCancelled error.
func finishResult(ctx context.Context, c *C.mcp_result) (*Result, error) {
	defer C.mcp_result_free(c)
	result := copyResult(c)
	if err := ctx.Err(); err != nil && result.FinishReason == "cancelled" {
		return result, &Error{Code: ErrCancelled, Message: "the call was cancelled: " + err.Error(), cause: err}
	}
	return result, nil
}

func copyResult(c *C.mcp_result) *Result {
	n := int(C.mcp_result_num_tokens(c))
	ids := make([]int32, n)
	if n > 0 {
		copy(ids, unsafe.Slice((*int32)(unsafe.Pointer(C.mcp_result_token_ids(c))), n))
	}
	usage, timings := C.mcp_result_usage(c), C.mcp_result_timings(c)
	seconds := func(s C.double) time.Duration { return time.Duration(float64(s) * float64(time.Second)) }
	return &Result{
		Text:         C.GoString(C.mcp_result_text(c)),
		TokenIDs:     ids,
		FinishReason: C.GoString(C.mcp_result_finish_reason(c)),
		Usage:        Usage{int(usage.prompt_tokens), int(usage.completion_tokens), int(usage.cached_tokens)},
		Timings:      Timings{seconds(timings.ttft_s), seconds(timings.tpot_s), seconds(timings.total_s), float64(timings.queue_s)},
	}
}
