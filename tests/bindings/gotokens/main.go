// Prints the greedy token ids of a raw prompt through the Go package, for the cross-language
// test (tests/bindings/test_same_tokens.py): gotokens MODEL PROMPT MAX_TOKENS.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"mcp2026/bindings/go/mcp"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: gotokens MODEL PROMPT MAX_TOKENS")
		os.Exit(2)
	}
	maxTokens, err := strconv.Atoi(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "MAX_TOKENS:", err)
		os.Exit(2)
	}
	session, err := mcp.NewSession("")
	if err == nil {
		defer session.Close()
		var model *mcp.Model
		if model, err = session.LoadModel(os.Args[1]); err == nil {
			defer model.Unload()
			var result *mcp.Result
			result, err = model.Infer(context.Background(), os.Args[2], mcp.MaxTokens(maxTokens), mcp.Temperature(0), mcp.Raw())
			if err == nil {
				fmt.Println("ids:", result.TokenIDs)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
