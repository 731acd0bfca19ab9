package server

//lint:file-ignore SA1019 a caller's log messages (deprecated by SEP-2577, still in 2025-11-25) are among what reaches its stream.

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store/memory"
)

// busHarness is a replica's session table holding one session, "sid-1",
// whose caller (a go-sdk client over in-memory transports, at log level
// debug) has its stream here and counts what reaches it.
type busHarness struct {
	x              *sharedSessions
	h              *heldSession
	logs, progress atomic.Int64 // what reached the caller
	sent, other    atomic.Int64 // notifications written (log, progress), and anything else
}

func newBusHarness(t testing.TB) *busHarness {
	t.Helper()
	b := &busHarness{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "replica", Version: "1"}, &mcp.ServerOptions{Logger: quietLogger()})
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/message" || method == "notifications/progress" {
				b.sent.Add(1)
			} else {
				b.other.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	st, err := memory.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) { b.logs.Add(1) },
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { b.progress.Add(1) },
	})
	cs, err := cl.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	b.x = newSharedSessions(st, srv, 0, time.Now, quietLogger())
	b.h = &heldSession{ss: ss, subs: map[string]bool{}, saved: savedSession{Protocol: "2025-11-25", replicated: replicated{LogLevel: "debug"}}}
	b.h.streams.Store(1)
	b.x.hold("sid-1", b.h)
	return b
}

// settled waits until every log message and progress notification the
// session sent (counted as deliver writes it, before the caller reads it)
// has reached the caller, and returns what reached it. A fixed sleep here
// lost the race to a loaded machine.
func (b *busHarness) settled(t testing.TB) (logs, progress int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.logs.Load()+b.progress.Load() < b.sent.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications sent, %d reached the caller in 10 s", b.sent.Load(), b.logs.Load()+b.progress.Load())
		}
		time.Sleep(time.Millisecond)
	}
	return b.logs.Load(), b.progress.Load()
}

// A note for the session is written on its stream; every message that is
// not one (bad JSON, another kind, another session, a body that is no
// notification, a method that is not passed on) writes nothing and
// changes nothing.
func TestBusMessages(t *testing.T) {
	b := newBusHarness(t)
	b.x.deliver([]byte(`{"session":"sid-1","kind":"note","body":{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}}`))
	b.x.deliver([]byte(`{"session":"sid-1","kind":"note","body":{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}}`))
	if logs, progress := b.settled(t); logs != 1 || progress != 1 {
		t.Fatalf("two notes wrote %d log messages and %d progress notifications, want 1 and 1", logs, progress)
	}
	for name, msg := range map[string]string{
		"not JSON":                       `{"session":"sid-1","kind":"note",`,
		"an array":                       `[{"session":"sid-1","kind":"note"}]`,
		"no session":                     `{"kind":"note","body":{"method":"notifications/message","params":{"level":"info","data":"x"}}}`,
		"another session":                `{"session":"sid-2","kind":"note","body":{"method":"notifications/message","params":{"level":"info","data":"x"}}}`,
		"no body":                        `{"session":"sid-1","kind":"note"}`,
		"a body not an object":           `{"session":"sid-1","kind":"note","body":"notifications/message"}`,
		"bad params":                     `{"session":"sid-1","kind":"note","body":{"method":"notifications/message","params":[1]}}`,
		"another method":                 `{"session":"sid-1","kind":"note","body":{"method":"notifications/resources/updated","params":{"uri":"x://y"}}}`,
		"a request":                      `{"session":"sid-1","kind":"note","body":{"id":1,"method":"roots/list","params":{}}}`,
		"an unknown kind":                `{"session":"sid-1","kind":"nonsense","body":{"method":"notifications/message","params":{"level":"info","data":"x"}}}`,
		"an ack for no one":              `{"session":"sid-1","kind":"ack","nonce":"nobody"}`,
		"a change, no store row":         `{"session":"sid-1","kind":"changed","from":"abc","nonce":"n1"}`,
		"a stream let go by another":     `{"session":"sid-1","kind":"stream","from":"abc"}`,
		"a caller's message, no handler": `{"session":"sid-1","body":{"jsonrpc":"2.0","id":"gh-x-1","result":{}}}`,
		"empty":                          ``,
	} {
		b.x.deliver([]byte(msg))
		if logs, progress := b.settled(t); logs != 1 || progress != 1 {
			t.Fatalf("%s: wrote something (%d log messages, %d progress notifications in all)", name, logs, progress)
		}
	}
	// A note for a stream this replica no longer holds is dropped.
	b.h.streams.Store(0)
	b.x.deliver([]byte(`{"session":"sid-1","kind":"note","body":{"method":"notifications/message","params":{"level":"info","data":"x"}}}`))
	if logs, _ := b.settled(t); logs != 1 {
		t.Fatal("a note was written on a stream this replica does not hold")
	}
	b.h.mu.Lock()
	defer b.h.mu.Unlock()
	if b.h.saved.Stream != "" || len(b.h.subs) != 0 {
		t.Fatalf("the session changed: stream %q, subscriptions %v", b.h.saved.Stream, b.h.subs)
	}
}

// FuzzBusMessage: whatever another replica sends, deliver returns, and
// what it writes on the caller's stream is a log message or a progress
// notification, at most one a message.
func FuzzBusMessage(f *testing.F) {
	f.Add([]byte(`{"session":"sid-1","kind":"note","body":{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}}`))
	f.Add([]byte(`{"session":"sid-1","kind":"note","body":{"method":"notifications/progress","params":{"progressToken":1,"progress":0.5,"total":1}}}`))
	f.Add([]byte(`{"session":"sid-1","kind":"stream","from":"abc","holds":true}`))
	f.Add([]byte(`{"session":"sid-1","kind":"changed","from":"abc","nonce":"n"}`))
	f.Add([]byte(`{"session":"sid-1","kind":"ack","nonce":"n"}`))
	b := newBusHarness(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		before := b.sent.Load()
		b.x.deliver(msg)
		if got := b.sent.Load() - before; got > 1 || b.other.Load() != 0 {
			t.Fatalf("%q wrote %d notifications, and %d of other kinds in all", msg, got, b.other.Load())
		}
		b.h.mu.Lock()
		b.h.saved.Stream = "" // a stream message names a holder; the next input starts afresh
		b.h.mu.Unlock()
	})
}
