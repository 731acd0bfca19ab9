package loop_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/chattest"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bank is a real MCP server (go-sdk) whose tools count their effects.
type bank struct {
	mu      sync.Mutex
	effects map[string]int    // tool -> times its effect ran
	keys    map[string]string // idempotency keys seen, key -> tool
	// gate, when set, is called inside an effect before it counts (to make
	// concurrent calls meet).
	gate func(ctx context.Context, tool string) error
}

func (b *bank) count(tool string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.effects[tool]
}

func (b *bank) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, v := range b.effects {
		n += v
	}
	return n
}

type amountArgs struct {
	Amount int `json:"amount,omitempty"`
}

func (b *bank) handler(tool string) mcp.ToolHandlerFor[amountArgs, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, args amountArgs) (*mcp.CallToolResult, any, error) {
		if b.gate != nil {
			if err := b.gate(ctx, tool); err != nil {
				return nil, nil, err
			}
		}
		key, _ := req.Params.Meta["idempotencyKey"].(string)
		b.mu.Lock()
		b.effects[tool]++
		if key != "" {
			b.keys[key] = tool
		}
		n := b.effects[tool]
		b.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
			Text: tool + " ok #" + itoa(n) + " key=" + key}}}, nil, nil
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// startBank serves the bank over in-memory transports and returns its
// tools as the loop sees them (names "bank__<tool>").
func startBank(t *testing.T) (*bank, []loop.Tool) {
	t.Helper()
	b := &bank{effects: map[string]int{}, keys: map[string]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	for _, name := range []string{"balance", "charge", "transfer", "delete_account"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "the bank's " + name}, b.handler(name))
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	tools, err := loop.SessionTools(ctx, cs, "bank", "bank__")
	if err != nil {
		t.Fatal(err)
	}
	return b, tools
}

// testStore is a store plus a way to reopen it as another process would.
type testStore struct {
	store.Store
	reopen func(t *testing.T) store.Store
}

func storeKinds() []string { return []string{"memory", "sqlite"} }

func openStore(t *testing.T, kind string) testStore {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case "memory":
		m, err := memory.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return testStore{Store: m, reopen: func(*testing.T) store.Store { return m }}
	case "sqlite":
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		open := func(t *testing.T) store.Store {
			s, err := sqlite.Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return testStore{Store: open(t), reopen: open}
	case "postgres":
		dsn := pgtest.Schema(t, "loop", "the run loop's PostgreSQL tests")
		open := func(t *testing.T) store.Store {
			s, err := postgres.Open(ctx, dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return testStore{Store: open(t), reopen: open}
	}
	t.Fatalf("unknown store %q", kind)
	return testStore{}
}

// newJournal returns a journal over s with approvals, as a fresh process
// would make it (a new executor).
func newJournal(t *testing.T, s store.Store) *durable.Journal {
	t.Helper()
	j, err := durable.NewJournal(s, &durable.JournalOptions{Approvals: s, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func newChat(t *testing.T, script chattest.Script) (*chattest.Server, loop.Model) {
	t.Helper()
	srv := chattest.NewServer(script)
	t.Cleanup(srv.Close)
	return srv, &chatModel{URL: srv.URL}
}

func run(t *testing.T, o loop.Options) *loop.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := loop.Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// toolMessage returns the tool message answering call id.
func toolMessage(t *testing.T, res *loop.Result, id string) loop.Message {
	t.Helper()
	for _, m := range res.Messages {
		if m.Role == loop.RoleTool && m.ToolCallID == id {
			return m
		}
	}
	t.Fatalf("no tool message for %q in %+v", id, res.Messages)
	return loop.Message{}
}

var errGate = errors.New("gate closed")

// barrier returns a gate that holds each of the named tools until all of
// them are inside their effect: it proves they run at the same time.
func barrier(tools ...string) func(ctx context.Context, tool string) error {
	var n atomic.Int32
	all := make(chan struct{})
	want := int32(len(tools))
	member := map[string]bool{}
	for _, t := range tools {
		member[t] = true
	}
	return func(ctx context.Context, tool string) error {
		if !member[tool] {
			return nil
		}
		if n.Add(1) == want {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return errGate
		}
	}
}
