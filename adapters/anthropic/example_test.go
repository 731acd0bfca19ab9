package anthropic_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	anthropic "github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/refusal"
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

// Example_restart is an agent that drives the Messages API itself and is
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
	api := anthropictest.NewServer(anthropictest.Reply{Calls: []anthropictest.Call{
		{ID: "toolu_pay", Name: "pay__charge", Args: `{"cents":500}`}}})
	defer api.Close()
	client := sdk.NewClient(option.WithBaseURL(api.URL), option.WithAPIKey("local"))
	var charges atomic.Int32
	charged, hold := make(chan struct{}, 1), make(chan struct{})
	cs, closeBank := bank(ctx, &charges, charged, hold)
	defer closeBank()
	tools, err := loop.SessionTools(ctx, cs, "pay", "pay__")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "anthropic-example")
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
	defs, err := anthropic.ToolParams(first.Tools())
	if err != nil {
		log.Fatal(err)
	}
	msg, err := client.Messages.New(ctx, sdk.MessageNewParams{Model: sdk.ModelClaudeSonnet5_5, MaxTokens: 1024, Tools: defs,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Charge 5.00 for order 42."))}})
	if err != nil {
		log.Fatal(err)
	}
	inFlight := make(chan error, 1)
	go func() {
		_, _, _, err := anthropic.ToolResults(ctx, first, msg)
		inFlight <- err
	}()
	<-charged

	// A second copy, started while the first still runs.
	second, stopSecond := start()
	_, err = retryBusy(ctx, 200*time.Millisecond, func() ([]loop.Outcome, error) {
		_, outs, _, err := anthropic.ToolResults(ctx, second, msg)
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
		_, outs, _, err := anthropic.ToolResults(ctx, restarted, msg)
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
	// restarted: toolu_pay in_doubt - the charge may have gone through: not sent again, someone decides
	// charges at the bank: 1
}
