package anthropic_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// weather is a small MCP server (go-sdk) for the example.
func weather(ctx context.Context) (*mcp.ClientSession, func()) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	type args struct {
		City string `json:"city"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "Forecast for a city."},
		func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			key, _ := req.Params.Meta[loop.MetaIdempotencyKey].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.City + ": sunny (key " + key + ")"}}}, nil, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	return cs, func() { cs.Close(); ss.Wait() }
}

// A durable run over the Messages API: two parallel tool_use blocks, each
// made once under runID:toolu_id, then the answer. Run again with the same
// store, the run replays: the model is asked nothing and no tool runs.
func ExampleModel() {
	ctx := context.Background()
	// The local Messages API; with a key, drop the base URL for the real one.
	api := anthropictest.NewServer(
		anthropictest.Reply{Calls: []anthropictest.Call{
			{ID: "toolu_1", Name: "weather__forecast", Args: `{"city":"Oslo"}`},
			{ID: "toolu_2", Name: "weather__forecast", Args: `{"city":"Lima"}`},
		}},
		anthropictest.Reply{Text: "Sunny in both."},
	)
	defer api.Close()
	client := sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("local"))

	cs, stop := weather(ctx)
	defer stop()
	tools, err := loop.SessionTools(ctx, cs, "weather", "weather__")
	if err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "gatehouse.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
	if err != nil {
		log.Fatal(err)
	}

	opts := loop.Options{RunID: "trip-1", Journal: journal, Tools: tools, Prompt: "Weather in Oslo and Lima?",
		Model: &anthropic.Model{Client: &client, Params: sdk.MessageNewParams{Model: sdk.ModelClaudeSonnet5_5}}}
	for range 2 {
		res, err := loop.Run(ctx, opts)
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range res.Messages {
			if m.Role == loop.RoleTool {
				fmt.Println(m.ToolCallID, "->", m.Content)
			}
		}
		fmt.Printf("%s (replayed %d of %d turns; %d requests)\n", res.Text, res.ReplayedTurns, res.Turns, api.Requests())
	}
	// Output:
	// toolu_1 -> Oslo: sunny (key trip-1:toolu_1)
	// toolu_2 -> Lima: sunny (key trip-1:toolu_2)
	// Sunny in both. (replayed 0 of 2 turns; 2 requests)
	// toolu_1 -> Oslo: sunny (key trip-1:toolu_1)
	// toolu_2 -> Lima: sunny (key trip-1:toolu_2)
	// Sunny in both. (replayed 2 of 2 turns; 2 requests)
}
