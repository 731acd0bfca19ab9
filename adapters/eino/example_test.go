package eino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
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

// The durable loop over an eino chat model: loop.Run journals each turn
// and each tool call, so running it again resumes instead of repeating.
func Example() {
	ctx := context.Background()
	srv := einotest.NewServer( // a local Chat Completions server; use the provider's URL and key
		einotest.Reply{Calls: []einotest.Call{{ID: "call_1", Name: "bank__balance", Args: `{"account":"main"}`}}},
		einotest.Reply{Text: "You have 42 EUR."},
	)
	defer srv.Close()

	cm, err := openai.NewChatModel(ctx, &openai.ChatModelConfig{BaseURL: srv.URL, APIKey: "key", Model: "gpt-4.1"})
	if err != nil {
		log.Fatal(err)
	}
	st, _ := memory.New(nil) // sqlite.Open or postgres.Open to survive a restart
	defer st.Close()
	journal, _ := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})

	opts := loop.Options{RunID: "ticket-7", Journal: journal, Model: gheino.NewModel(cm),
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

// eino's own ReAct agent with Gatehouse tools: each call goes through the
// journal under the executor's run ID and the ToolsNode's call ID.
func ExampleTools() {
	ctx := context.Background()
	srv := einotest.NewServer(
		einotest.Reply{Calls: []einotest.Call{{ID: "call_9", Name: "bank__balance", Args: `{"account":"main"}`}}},
		einotest.Reply{Text: "42 EUR."},
	)
	defer srv.Close()
	cm, err := openai.NewChatModel(ctx, &openai.ChatModelConfig{BaseURL: srv.URL, APIKey: "key", Model: "gpt-4.1"})
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
	tools, err := gheino.Tools(ex)
	if err != nil {
		log.Fatal(err)
	}
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: cm, ToolsConfig: compose.ToolsNodeConfig{Tools: tools}})
	if err != nil {
		log.Fatal(err)
	}
	out, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("What is my balance?")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Content)
	// Output:
	// 42 EUR.
}
