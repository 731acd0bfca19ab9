package openai_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

type cityArgs struct {
	City string `json:"city"`
}

// weatherServer connects a client session to an MCP server (go-sdk, in
// memory) with one tool, and returns it with a function that closes both.
func weatherServer(ctx context.Context) (*mcp.ClientSession, func()) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "The forecast for a city."},
		func(_ context.Context, req *mcp.CallToolRequest, in cityArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	return cs, func() { cs.Close(); ss.Wait() }
}

// Example runs a durable agent on the Responses API: loop.Run with a
// ResponsesModel, the tools of an MCP server and a journal on SQLite. The
// model is the local wire-format server; with an API key, it is
// oai.NewClient() and a real model name.
func Example() {
	ctx := context.Background()
	model := openaitest.NewServer(
		openaitest.Reply{Calls: []openaitest.Call{
			{ID: "call_osl", Name: "weather__forecast", Args: `{"city":"Oslo"}`},
			{ID: "call_ber", Name: "weather__forecast", Args: `{"city":"Bergen"}`},
		}},
		openaitest.Reply{Text: "Sunny in both."},
	)
	defer model.Close()
	client := oai.NewClient(option.WithBaseURL(model.URL+"/v1"), option.WithAPIKey("local"))

	cs, closeServer := weatherServer(ctx)
	defer closeServer()
	tools, err := loop.SessionTools(ctx, cs, "weather", "weather__")
	if err != nil {
		log.Fatal(err)
	}

	dir, err := os.MkdirTemp("", "openai-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "agent.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
	if err != nil {
		log.Fatal(err)
	}

	opts := loop.Options{RunID: "forecast-1", Journal: journal, Tools: tools,
		Model: openai.NewResponsesModel(client, "gpt-5"), Prompt: "Weather in Oslo and Bergen?"}
	res, err := loop.Run(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Messages {
		if m.Role == loop.RoleTool {
			fmt.Printf("%s: %s\n", m.ToolCallID, m.Content)
		}
	}
	fmt.Println(res.Text)

	// The same run again: everything replays from the journal.
	res, err = loop.Run(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.ReplayedTurns, "turns replayed;", model.Requests(), "requests to the model in all")
	// Output:
	// call_osl: sunny in Oslo
	// call_ber: sunny in Bergen
	// Sunny in both.
	// 2 turns replayed; 2 requests to the model in all
}

// ExampleCallResponses drives the Responses API with the SDK directly
// (previous_response_id and the outputs as the next input) and makes the
// model's function calls through a loop.Executor.
func ExampleCallResponses() {
	ctx := context.Background()
	model := openaitest.NewServer(
		openaitest.Reply{Calls: []openaitest.Call{{ID: "call_1", Name: "weather__forecast", Args: `{"city":"Oslo"}`}}},
		openaitest.Reply{Text: "Sunny."},
	)
	defer model.Close()
	client := oai.NewClient(option.WithBaseURL(model.URL+"/v1"), option.WithAPIKey("local"))
	cs, closeServer := weatherServer(ctx)
	defer closeServer()
	tools, err := loop.SessionTools(ctx, cs, "weather", "weather__")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "openai-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "agent.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
	if err != nil {
		log.Fatal(err)
	}

	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "manual-1", Journal: journal, Tools: tools})
	if err != nil {
		log.Fatal(err)
	}
	defs, err := openai.ResponsesTools(ex.Tools(), nil)
	if err != nil {
		log.Fatal(err)
	}
	params := responses.ResponseNewParams{Model: "gpt-5", Tools: defs,
		Input: responses.ResponseNewParamsInputUnion{OfString: oai.String("Weather in Oslo?")}}
	for {
		resp, err := client.Responses.New(ctx, params)
		if err != nil {
			log.Fatal(err)
		}
		outputs, _, err := openai.CallResponses(ctx, ex, resp.Output)
		if err != nil {
			log.Fatal(err) // run_busy or the journal failed
		}
		if len(outputs) == 0 {
			fmt.Println(resp.OutputText())
			break
		}
		fmt.Println(len(outputs), "call made")
		params.PreviousResponseID = oai.String(resp.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: outputs}
	}
	// Output:
	// 1 call made
	// Sunny.
}
