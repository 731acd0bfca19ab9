package loop_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/chattest"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// A run whose model calls a Go tool twice, stopped after its first turn
// (as a crash would stop it) and resumed: the resume replays the recorded
// turn and call, and only the new turn reaches the model.
func Example() {
	ctx := context.Background()
	// A scripted stand-in for a model provider, on 127.0.0.1.
	provider := chattest.NewServer(chattest.ByTurn(
		chattest.Reply{Calls: []chattest.Call{{ID: "call-1", Name: "charge", Args: `{"cents":500}`}}},
		chattest.Reply{Text: "Charged 5.00."},
	))
	defer provider.Close()

	st, _ := memory.New(nil) // or sqlite.Open / postgres.Open: what a resume needs
	defer st.Close()
	journal, _ := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})

	charges := 0
	charge := loop.Tool{
		Name:        "charge",
		Description: "Charge the customer's card.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"cents":{"type":"integer"}}}`),
		Call: func(ctx context.Context, args json.RawMessage, key string) (*mcp.CallToolResult, error) {
			charges++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok, key " + key}}}, nil
		},
	}
	opts := loop.Options{
		RunID:    "order-42",
		Journal:  journal,
		Model:    &chatModel{URL: provider.URL},
		Tools:    []loop.Tool{charge},
		Guard:    policy.ReadOnly("charge"),
		Prompt:   "Charge 5.00 for order 42.",
		MaxTurns: 1, // stop after the first turn
	}
	_, err := loop.Run(ctx, opts)
	fmt.Println("first run:", err)

	opts.MaxTurns = 0
	res, err := loop.Run(ctx, opts) // the resume
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	fmt.Println("charges:", charges, "model requests:", provider.Requests(), "replayed turns:", res.ReplayedTurns)
	// Output:
	// first run: loop: too many turns: the model still called tools after 1 turns
	// Charged 5.00.
	// charges: 1 model requests: 2 replayed turns: 1
}
