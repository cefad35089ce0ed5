package mcp_test

// These tests run the default model through libmcp (build it first: make libmcp). The model is
// MCP_TEST_MODEL (a .mcp path) when set, else the catalog's smollm2-135m-instruct (pulled and
// compiled on first use, as `make demo` does).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mcp2026/bindings/go/mcp"
)

var model *mcp.Model

func TestMain(m *testing.M) {
	session, err := mcp.NewSession("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	name := os.Getenv("MCP_TEST_MODEL")
	if name == "" {
		name = "smollm2-135m-instruct"
	}
	if model, err = session.LoadModel(name); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	model.Unload()
	session.Close()
	os.Exit(code)
}

func greedy(t *testing.T, prompt string, n int) *mcp.Result {
	t.Helper()
	result, err := model.Infer(context.Background(), prompt, mcp.MaxTokens(n), mcp.Temperature(0), mcp.Raw())
	if err != nil {
		t.Fatal(err)
	}
	return result
}

func TestInferGivesTokensUsageAndFinishReason(t *testing.T) {
	result := greedy(t, "The capital of France is", 6)
	if len(result.TokenIDs) != 6 || result.FinishReason != "length" || result.Usage.CompletionTokens != 6 {
		t.Fatalf("want 6 tokens ending by length, got %d (%q, usage %+v)", len(result.TokenIDs), result.FinishReason, result.Usage)
	}
	if !strings.Contains(result.Text, "Paris") {
		t.Fatalf("the default model names Paris; got %q", result.Text)
	}
	again := greedy(t, "The capital of France is", 6)
	if fmt.Sprint(again.TokenIDs) != fmt.Sprint(result.TokenIDs) {
		t.Fatalf("greedy calls differ: %v and %v", result.TokenIDs, again.TokenIDs)
	}
}

func TestStreamDeltasMakeTheResultText(t *testing.T) {
	stream := model.Stream(context.Background(), "Count: one, two,", mcp.MaxTokens(8), mcp.Temperature(0), mcp.Raw())
	var text strings.Builder
	for delta := range stream.Deltas() {
		text.WriteString(delta)
	}
	result, err := stream.Result()
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != result.Text || result.FinishReason != "length" {
		t.Fatalf("deltas %q, result %q (%s)", text.String(), result.Text, result.FinishReason)
	}
}

func TestStreamCancelEndsTheRequest(t *testing.T) {
	stream := model.Stream(context.Background(), "Write a long story about a dragon.", mcp.MaxTokens(200), mcp.Temperature(0))
	<-stream.Deltas()
	stream.Cancel()
	result, err := stream.Result()
	if err != nil {
		t.Fatal(err)
	}
	if result.FinishReason != "cancelled" || len(result.TokenIDs) >= 200 {
		t.Fatalf("want cancelled early, got %q after %d tokens", result.FinishReason, len(result.TokenIDs))
	}
}

func TestContextDeadlineCancelsWithATypedError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	result, err := model.Infer(ctx, "Write a long story about a dragon.", mcp.MaxTokens(2000), mcp.Temperature(0))
	var mcpErr *mcp.Error
	if !errors.As(err, &mcpErr) || mcpErr.Code != mcp.ErrCancelled || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want ErrCancelled wrapping DeadlineExceeded, got %v", err)
	}
	if result == nil || result.FinishReason != "cancelled" || len(result.TokenIDs) >= 2000 {
		t.Fatalf("want the partial result, got %+v", result)
	}
}

func TestChatAnswersThroughTheTemplate(t *testing.T) {
	result, err := model.Chat(context.Background(), []mcp.Message{
		{Role: "system", Content: "You answer in one word."},
		{Role: "user", Content: "What is the capital of France?"},
	}, mcp.MaxTokens(8), mcp.Temperature(0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(result.Text, "Paris") || result.Usage.PromptTokens < 10 {
		t.Fatalf("got %q, usage %+v", result.Text, result.Usage)
	}
}

func TestErrorsCarryTheirCodes(t *testing.T) {
	cases := []struct {
		name string
		call func() error
		code mcp.Code
		text string
	}{
		{"temperature", func() error {
			_, err := model.Infer(context.Background(), "hi", mcp.Temperature(-1))
			return err
		}, mcp.ErrInvalidRequest, "temperature"},
		{"context", func() error {
			_, err := model.Infer(context.Background(), strings.Repeat("word ", 20000), mcp.Raw())
			return err
		}, mcp.ErrContextLength, "context"},
		{"slo", func() error {
			_, err := model.Infer(context.Background(), "hi", mcp.SLOClass("urgent"))
			return err
		}, mcp.ErrInvalidRequest, "urgent"},
		{"chat raw", func() error {
			_, err := model.Chat(context.Background(), []mcp.Message{{Role: "user", Content: "hi"}}, mcp.Raw())
			return err
		}, mcp.ErrInvalidRequest, "raw"},
		{"config", func() error {
			_, err := mcp.NewSession("/nonexistent/mcp-config.yaml")
			return err
		}, mcp.ErrConfig, "/nonexistent/mcp-config.yaml"},
	}
	for _, c := range cases {
		err := c.call()
		var mcpErr *mcp.Error
		if !errors.As(err, &mcpErr) || mcpErr.Code != c.code || !strings.Contains(mcpErr.Message, c.text) {
			t.Errorf("%s: want %s mentioning %q, got %v", c.name, c.code, c.text, err)
		}
	}
}

func TestModelNotFoundAndUnloadedModel(t *testing.T) {
	session, err := mcp.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	_, err = session.LoadModel("/nonexistent/model.mcp")
	var mcpErr *mcp.Error
	if !errors.As(err, &mcpErr) || mcpErr.Code != mcp.ErrModelNotFound || !strings.Contains(mcpErr.Message, "model.mcp") {
		t.Fatalf("want ErrModelNotFound naming the file, got %v", err)
	}
	name := os.Getenv("MCP_TEST_MODEL")
	if name == "" {
		name = "smollm2-135m-instruct"
	}
	second, err := session.LoadModel(name)
	if err != nil {
		t.Fatal(err)
	}
	stream := second.Stream(context.Background(), "Write a long story about a dragon.", mcp.MaxTokens(2000), mcp.Temperature(0))
	<-stream.Deltas()
	if err := second.Unload(); err != nil { // cancels the stream under way, then frees the model
		t.Fatal(err)
	}
	if result, err := stream.Result(); err != nil || result.FinishReason != "cancelled" {
		t.Fatalf("want the stream cancelled by Unload, got %+v, %v", result, err)
	}
	_, err = second.Infer(context.Background(), "hi")
	if !errors.As(err, &mcpErr) || mcpErr.Code != mcp.ErrInvalidRequest || !strings.Contains(mcpErr.Message, "unloaded") {
		t.Fatalf("want ErrInvalidRequest after Unload, got %v", err)
	}
	if err := second.Unload(); err != nil {
		t.Fatalf("a second Unload is a no-op, got %v", err)
	}
}

func TestManyGoroutinesBatchInOneEngineLoop(t *testing.T) {
	before, err := model.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Each result is what the request would get alone up to the rounding of batched int4/bf16
	// GEMMs (runtime/model.py), so this checks lengths and counters, not ids.
	prompts := []string{"The sky is", "Water is made of", "The capital of Italy is", "Cats like to"}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(p string) {
			defer wg.Done()
			<-start
			r, err := model.Infer(context.Background(), p, mcp.MaxTokens(12), mcp.Temperature(0), mcp.Raw())
			if err == nil && (len(r.TokenIDs) != 12 || r.FinishReason != "length") {
				err = fmt.Errorf("%q gave %d tokens (%s), want 12 (length)", p, len(r.TokenIDs), r.FinishReason)
			}
			errs <- err
		}(prompts[i%len(prompts)])
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	after, err := model.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.MaxSequencesInStep < 2 || after.NumFinished-before.NumFinished != n {
		t.Fatalf("want batched steps and %d more finished, got %+v (before %+v)", n, after, before)
	}
}

// The benchmarks benchmarks/bindings_overhead.py reads: a 1-token greedy call (ns/op), and the
// time per token of 32-token streams (ns/token).
func BenchmarkInferOneToken(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := model.Infer(context.Background(), "The capital of France is", mcp.MaxTokens(1), mcp.Temperature(0), mcp.Raw()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamToken(b *testing.B) {
	tokens, start := 0, time.Now()
	for i := 0; i < b.N; i++ {
		stream := model.Stream(context.Background(), "Once upon a time", mcp.MaxTokens(32), mcp.Temperature(0), mcp.Raw())
		for range stream.Deltas() {
		}
		result, err := stream.Result()
		if err != nil {
			b.Fatal(err)
		}
		tokens += len(result.TokenIDs)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(tokens), "ns/token")
}
