// The product brief's quickstart in Go: open a session, load the default model, ask it.
// Run after `make demo`: go run ./examples/go/quickstart
package main

import (
	"context"
	"fmt"
	"os"

	"mcp2026/bindings/go/mcp"
)

func main() {
	// Initialize an MCP inference session (configure mcp-config.yaml first)
	session, err := mcp.NewSession("mcp-config.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer session.Close()
	// Load the compiled model (.mcp format); `make demo` pulled and compiled it
	model, err := session.LoadModel("smollm2-135m-instruct.mcp")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer model.Unload()
	// Run inference (the best backend is chosen automatically)
	result, err := model.Infer(context.Background(), "Explain quantum entanglement in simple terms.",
		mcp.MaxTokens(128), mcp.Temperature(0.7))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(result.Text)
}
