package openai_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/refusal"
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

// bank is an MCP server (go-sdk, in memory) whose charge takes effect and
// then answers only once hold is closed: a call that stays in flight.
func bank(ctx context.Context, charges *atomic.Int32, charged chan<- struct{}, hold <-chan struct{}) (*mcp.ClientSession, func()) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "pay", Version: "1"}, nil)
	type args struct {
		Cents int `json:"cents"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "charge", Description: "Charge the customer's card."},
		func(_ context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			charges.Add(1)
			charged <- struct{}{}
			<-hold
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("charged ", a.Cents)}}}, nil, nil
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

// retryBusy makes a reply's calls (call) and retries run_busy, the answer
// while another executor holds a call of the run, with backoff for up to
// patience. A restarted agent hands its executor the reply it was working
// on: a recorded call replays, a call left in flight by the dead process is
// in_doubt at once.
func retryBusy(ctx context.Context, patience time.Duration, call func() ([]loop.Outcome, error)) ([]loop.Outcome, error) {
	giveUp := time.Now().Add(patience)
	wait := 10 * time.Millisecond
	for {
		outs, err := call()
		busy, ok := refusal.As(err)
		if !ok || busy.Code != refusal.RunBusy || time.Now().After(giveUp) {
			return outs, err
		}
		d := wait
		if busy.RetryAfter > 0 {
			d = min(d, busy.RetryAfter) // the holder's lease ends then
		}
		select {
		case <-ctx.Done():
			return outs, err
		case <-time.After(d):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// Example_restart is an agent that drives the Responses API itself and is
// restarted while a charge is at the bank. Each copy of the agent opens the
// journal on the same SQLite file and hands its executor the reply it was
// working on (an agent keeps its conversation; loop.Run keeps it in the
// journal). A copy started while the first still holds the call gets
// run_busy, retries with backoff and gives up. Once the first copy is dead,
// the restarted agent gets in_doubt at once, not run_busy for the rest of
// the lease (30 s): its journal takes the dead one's executor instance of
// the store. in_doubt means the charge may have happened: the agent does
// not charge again; someone decides.
func Example_restart() {
	ctx := context.Background()
	model := openaitest.NewServer(openaitest.Reply{Calls: []openaitest.Call{
		{ID: "call_pay", Name: "pay__charge", Args: `{"cents":500}`}}})
	defer model.Close()
	client := oai.NewClient(option.WithBaseURL(model.URL+"/v1"), option.WithAPIKey("local"))
	var charges atomic.Int32
	charged, hold := make(chan struct{}, 1), make(chan struct{})
	cs, closeBank := bank(ctx, &charges, charged, hold)
	defer closeBank()
	tools, err := loop.SessionTools(ctx, cs, "pay", "pay__")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "openai-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// start is one copy of the agent: its store, journal and executor.
	start := func() (*loop.Executor, func()) {
		st, err := sqlite.Open(ctx, filepath.Join(dir, "agent.db"), nil)
		if err != nil {
			log.Fatal(err)
		}
		journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st})
		if err != nil {
			log.Fatal(err)
		}
		ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "order-42", Journal: journal, Tools: tools})
		if err != nil {
			log.Fatal(err)
		}
		return ex, func() { journal.Close(); st.Close() }
	}

	// The first copy: the model asks for a charge, which reaches the bank.
	first, stopFirst := start()
	defs, err := openai.ResponsesTools(first.Tools(), nil)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-5", Tools: defs,
		Input: responses.ResponseNewParamsInputUnion{OfString: oai.String("Charge 5.00 for order 42.")}})
	if err != nil {
		log.Fatal(err)
	}
	inFlight := make(chan error, 1)
	go func() {
		_, _, err := openai.CallResponses(ctx, first, resp.Output)
		inFlight <- err
	}()
	<-charged

	// A second copy, started while the first still runs.
	second, stopSecond := start()
	_, err = retryBusy(ctx, 200*time.Millisecond, func() ([]loop.Outcome, error) {
		_, outs, err := openai.CallResponses(ctx, second, resp.Output)
		return outs, err
	})
	stopSecond()
	if r, ok := refusal.As(err); ok {
		fmt.Println("second copy:", r.Code, "(the first holds the call); it gives up")
	}

	// The first copy dies. A killed process cannot tell the store; the
	// restarted agent's journal does, by taking the dead one's instance. In
	// one process, closing the first copy's journal tells it.
	stopFirst()
	restarted, stop := start()
	defer stop()
	outs, err := retryBusy(ctx, time.Minute, func() ([]loop.Outcome, error) {
		_, outs, err := openai.CallResponses(ctx, restarted, resp.Output)
		return outs, err
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range outs {
		if o.Code == refusal.InDoubt {
			fmt.Println("restarted:", o.Message.ToolCallID, o.Code, "- the charge may have gone through: not sent again, someone decides")
		}
	}
	fmt.Println("charges at the bank:", charges.Load())

	close(hold)
	<-inFlight // the dead copy's late answer is not recorded: the call stays in doubt
	// Output:
	// second copy: run_busy (the first holds the call); it gives up
	// restarted: call_pay in_doubt - the charge may have gone through: not sent again, someone decides
	// charges at the bank: 1
}
