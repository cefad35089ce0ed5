package mcp

import (
	"context"
	"sync"
)

// Stream is a request whose text deltas arrive on Deltas() as the engine generates them.
// Read Deltas to its end (it is closed then), then Result gives the outcome.
type Stream struct {
	deltas chan string
	stop   chan struct{}
	once   sync.Once
	done   chan struct{}
	ctx    context.Context
	unload <-chan struct{} // the model's: closed when Unload begins
	result *Result
	err    error
}

// Stream is Infer with the text handed out delta by delta.
func (m *Model) Stream(ctx context.Context, prompt string, opts ...Option) *Stream {
	return m.startStream(ctx, newCallInput(&prompt, nil, opts))
}

// ChatStream is Chat with the text handed out delta by delta.
func (m *Model) ChatStream(ctx context.Context, messages []Message, opts ...Option) *Stream {
	return m.startStream(ctx, newCallInput(nil, messages, opts))
}

func (m *Model) startStream(ctx context.Context, in *callInput) *Stream {
	s := &Stream{deltas: make(chan string, 64), stop: make(chan struct{}), done: make(chan struct{}), ctx: ctx,
		unload: m.unload}
	go func() {
		defer close(s.done)
		defer close(s.deltas)
		s.result, s.err = m.call(ctx, in, s)
	}()
	return s
}

// deliver is the C callback's side: a delta goes to the reader unless the stream was
// cancelled, its context ended or its model is being unloaded (Unload must not wait on a
// reader that is not reading).
func (s *Stream) deliver(delta string) bool {
	select {
	case s.deltas <- delta:
		return true
	case <-s.stop:
		return false
	case <-s.ctx.Done():
		return false
	case <-s.unload:
		return false
	}
}

// Deltas gives the text deltas; it is closed when the request ends.
func (s *Stream) Deltas() <-chan string { return s.deltas }

// Cancel ends the request at the engine's next step; deltas not yet read are dropped. Safe
// to call more than once and from any goroutine.
func (s *Stream) Cancel() {
	s.once.Do(func() { close(s.stop) })
}

// Result waits for the end of the request, dropping deltas not read yet, and gives its outcome
// (finish reason "cancelled" after Cancel; an *Error of code ErrCancelled when the context
// ended it).
func (s *Stream) Result() (*Result, error) {
	for range s.deltas {
	}
	<-s.done
	return s.result, s.err
}
