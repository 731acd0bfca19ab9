package eino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	gheino "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
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

// Example_restart is an agent that drives an eino chat model itself and is
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
	srv := einotest.NewServer(einotest.Reply{Calls: []einotest.Call{
		{ID: "call_pay", Name: "pay__charge", Args: `{"cents":500}`}}})
	defer srv.Close()
	cm, err := openai.NewChatModel(ctx, &openai.ChatModelConfig{BaseURL: srv.URL, APIKey: "key", Model: "gpt-4.1"})
	if err != nil {
		log.Fatal(err)
	}
	var charges atomic.Int32
	charged, hold := make(chan struct{}, 1), make(chan struct{})
	cs, closeBank := bank(ctx, &charges, charged, hold)
	defer closeBank()
	tools, err := loop.SessionTools(ctx, cs, "pay", "pay__")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "eino-example")
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
	infos, err := gheino.ToolInfos(first.Tools())
	if err != nil {
		log.Fatal(err)
	}
	tcm, err := cm.WithTools(infos)
	if err != nil {
		log.Fatal(err)
	}
	msg, err := tcm.Generate(ctx, []*schema.Message{schema.UserMessage("Charge 5.00 for order 42.")})
	if err != nil {
		log.Fatal(err)
	}
	inFlight := make(chan error, 1)
	go func() {
		_, _, err := gheino.Execute(ctx, first, msg)
		inFlight <- err
	}()
	<-charged

	// A second copy, started while the first still runs.
	second, stopSecond := start()
	_, err = retryBusy(ctx, 200*time.Millisecond, func() ([]loop.Outcome, error) {
		_, outs, err := gheino.Execute(ctx, second, msg)
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
		_, outs, err := gheino.Execute(ctx, restarted, msg)
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
