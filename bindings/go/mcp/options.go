package mcp

// #include <mcp/mcp.h>
import "C"

import (
	"time"
	"unsafe"
)

// Option sets one option of a call; options left out take the session's defaults.
type Option func(*callInput)

// MaxTokens caps the tokens generated.
func MaxTokens(n int) Option { return func(in *callInput) { in.options.max_tokens = C.int32_t(n) } }

// Temperature of sampling; 0 is greedy.
func Temperature(t float64) Option {
	return func(in *callInput) { in.options.temperature = C.double(t) }
}

// TopP keeps the smallest set of tokens whose probabilities sum to p.
func TopP(p float64) Option { return func(in *callInput) { in.options.top_p = C.double(p) } }

// TopK keeps the k likeliest tokens; 0 turns it off.
func TopK(k int) Option { return func(in *callInput) { in.options.top_k = C.int32_t(k) } }

// Seed makes a sampled call draw the same tokens again.
func Seed(seed int64) Option {
	return func(in *callInput) {
		in.options.seed = C.int64_t(seed)
		in.options.has_seed = 1
	}
}

// Stop ends generation at any of these strings.
func Stop(stops ...string) Option {
	return func(in *callInput) {
		if len(stops) == 0 {
			return
		}
		array := (*[1 << 20]*C.char)(C.malloc(C.size_t(len(stops)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		in.cStrings = append(in.cStrings, unsafe.Pointer(array))
		for i, stop := range stops {
			array[i] = in.cString(stop)
		}
		in.options.stop = &array[0]
		in.options.num_stop = C.size_t(len(stops))
	}
}

// SLOClass is "critical", "high", "medium" or "low".
func SLOClass(class string) Option {
	return func(in *callInput) { in.options.slo_class = in.cString(class) }
}

// Tenant names whose fair share the request counts against.
func Tenant(tenant string) Option {
	return func(in *callInput) { in.options.tenant = in.cString(tenant) }
}

// Timeout ends the request with finish reason "deadline" after d (the engine's own deadline;
// a context deadline cancels the call instead).
func Timeout(d time.Duration) Option {
	return func(in *callInput) { in.options.timeout_s = C.double(d.Seconds()) }
}

// Raw sends the prompt as is, without the chat template (Infer and Stream only).
func Raw() Option { return func(in *callInput) { in.options.raw = 1 } }

// System adds a system message to the prompt (Infer and Stream only).
func System(text string) Option { return func(in *callInput) { in.options.system = in.cString(text) } }

// Message is one turn of a conversation.
type Message struct {
	Role    string // "system", "user" or "assistant"
	Content string
}

func newCallInput(prompt *string, messages []Message, opts []Option) *callInput {
	in := &callInput{}
	C.mcp_infer_options_init(&in.options)
	if prompt != nil {
		in.prompt = in.cString(*prompt)
	}
	for _, m := range messages {
		in.messages = append(in.messages, C.mcp_message{role: in.cString(m.Role), content: in.cString(m.Content)})
	}
	for _, opt := range opts {
		opt(in)
	}
	return in
}
