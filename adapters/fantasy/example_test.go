package fantasy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openai"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// balance is a Go tool standing in for an MCP server's (use
// loop.ToolsetTools for a toolset's).
var balance = loop.Tool{
	Name:        "bank__balance",
	Description: "The account's balance.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"}},"required":["account"]}`),
	Call: func(_ context.Context, args json.RawMessage, key string) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42 EUR (key " + key + ")"}}}, nil
	},
}

// The durable loop over a fantasy language model: loop.Run journals each
// turn and each tool call, so running it again resumes instead of
// repeating.
func Example() {
	ctx := context.Background()
	srv := fantasytest.NewServer( // a local Chat Completions server; use the provider's URL and key
		fantasytest.Reply{Calls: []fantasytest.Call{{ID: "call_1", Name: "bank__balance", Args: `{"account":"main"}`}}},
		fantasytest.Reply{Text: "You have 42 EUR."},
	)
	defer srv.Close()

	provider, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("key"))
	if err != nil {
		log.Fatal(err)
	}
	lm, err := provider.LanguageModel(ctx, "gpt-4.1")
	if err != nil {
		log.Fatal(err)
	}
	st, _ := memory.New(nil) // sqlite.Open or postgres.Open to survive a restart
	defer st.Close()
	journal, _ := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})

	opts := loop.Options{RunID: "ticket-7", Journal: journal, Model: ghfantasy.NewModel(lm, nil),
		Tools: []loop.Tool{balance}, Prompt: "What is my balance?"}
	res, err := loop.Run(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Messages[2].Content)
	fmt.Println(res.Text)

	res, _ = loop.Run(ctx, opts) // the same run again: replayed, the model is not asked
	fmt.Println(res.Text, res.ReplayedTurns, srv.Requests())
	// Output:
	// 42 EUR (key ticket-7:call_1)
	// You have 42 EUR.
	// You have 42 EUR. 2 2
}

// fantasy's own agent with Gatehouse tools: each call goes through the
// journal under the executor's run ID and fantasy's tool call ID.
func ExampleTools() {
	ctx := context.Background()
	srv := fantasytest.NewServer(
		fantasytest.Reply{Calls: []fantasytest.Call{{ID: "call_9", Name: "bank__balance", Args: `{"account":"main"}`}}},
		fantasytest.Reply{Text: "42 EUR."},
	)
	defer srv.Close()
	provider, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("key"))
	if err != nil {
		log.Fatal(err)
	}
	lm, err := provider.LanguageModel(ctx, "gpt-4.1")
	if err != nil {
		log.Fatal(err)
	}
	st, _ := memory.New(nil)
	defer st.Close()
	journal, _ := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})

	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "ticket-8", Journal: journal, Tools: []loop.Tool{balance}})
	if err != nil {
		log.Fatal(err)
	}
	tools, err := ghfantasy.Tools(ex)
	if err != nil {
		log.Fatal(err)
	}
	res, err := fantasy.NewAgent(lm, fantasy.WithTools(tools...)).Generate(ctx, fantasy.AgentCall{Prompt: "What is my balance?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Steps[0].Content.ToolResults()[0].Result.(fantasy.ToolResultOutputContentText).Text)
	fmt.Println(res.Response.Content.Text())
	// Output:
	// 42 EUR (key ticket-8:call_9)
	// 42 EUR.
}
