package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// ownContent is a SubjectContent whose server "b" is each subject's own:
// a subject other than "nobody" reaches it on a session to another server
// (own), the one its content must come from; "nobody" is refused with a
// JSON-RPC error carrying data. It records the subjects it was asked for.
type ownContent struct {
	url  string // own's endpoint
	mu   sync.Mutex
	sess *mcp.ClientSession
	asks []string
}

func (o *ownContent) Own(server string) bool { return server == "b" }

func (o *ownContent) Do(ctx context.Context, server, subject string, req mcp.Request, op func(context.Context, *mcp.ClientSession) error) error {
	o.mu.Lock()
	o.asks = append(o.asks, server+"/"+subject)
	o.mu.Unlock()
	if req == nil || server != "b" {
		return errors.New("asked for the wrong request or server")
	}
	if subject == "nobody" {
		return &jsonrpc.Error{Code: -32032, Message: "[auth_required] connect", Data: json.RawMessage(`{"code":"auth_required","connectURL":"http://gw/connect/b"}`)}
	}
	o.mu.Lock()
	if o.sess == nil {
		c := mcp.NewClient(&mcp.Implementation{Name: "subject", Version: "1"}, nil)
		s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.url}, nil)
		if err != nil {
			o.mu.Unlock()
			return err
		}
		o.sess = s
	}
	s := o.sess
	o.mu.Unlock()
	return op(ctx, s)
}

// TestSubjectContent: with Options.Subjects, the resources/read,
// prompts/get and completion/complete of a server whose content is each
// subject's own go through SubjectContent.Do for the caller's subject,
// and what Do's session answers reaches the caller (not the server's
// shared session); Do's JSON-RPC error reaches the caller with its data;
// resources/subscribe is refused and nothing is sent; the lists still come
// from the shared session, and another server is read as before.
func TestSubjectContent(t *testing.T) {
	a, b := newRoutedServer(t, "a", "a://x"), newRoutedServer(t, "b", "b://x")
	own := newRoutedServer(t, "own", "b://x")
	sc := &ownContent{url: own.url}
	t.Cleanup(func() {
		if sc.sess != nil {
			_ = sc.sess.Close()
		}
	})
	var subject atomic.Value
	subject.Store("nobody")
	r := openRelay(t, []toolset.Server{a.server("a"), b.server("b")}, nil, &Options{
		Subjects: sc,
		Subject: func(context.Context, mcp.Request, bool) (string, bool) {
			return subject.Load().(string), true
		},
	})
	_, url := front(t, r, false)
	cs := dial(t, url, "2025-11-25", nil)
	ctx := ctxT(t)

	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 2 {
		t.Fatalf("resources/list: %v %v", rl, err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "b://x"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != -32032 || !strings.Contains(string(rpc.Data), `"connectURL":"http://gw/connect/b"`) {
		t.Fatalf("refused read: %v (data %s)", err, func() []byte {
			if rpc != nil {
				return rpc.Data
			}
			return nil
		}())
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__greet"}); !errors.As(err, &rpc) || rpc.Code != -32032 {
		t.Fatalf("refused prompt: %v", err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "b__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "x", Value: "y"}}); !errors.As(err, &rpc) || rpc.Code != -32032 {
		t.Fatalf("refused completion: %v", err)
	}
	if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "a://x"}); err != nil || res.Contents[0].Text != "a:a://x" {
		t.Fatalf("a's read: %v %v", res, err)
	}

	subject.Store("alice")
	if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "b://x"}); err != nil || res.Contents[0].Text != "own:b://x" {
		t.Fatalf("b's read for alice: %v %v", res, err)
	}
	if gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__greet"}); err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "from own" {
		t.Fatalf("b's prompt for alice: %v %v", gp, err)
	}
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "b://x"})
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, "sharedContent") {
		t.Fatalf("subscribe to b: %v", err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "b://x"}); err != nil {
		t.Fatalf("unsubscribe from b: %v", err)
	}
	if len(b.unsubscribed()) != 0 || len(own.unsubscribed()) != 0 {
		t.Fatalf("an unsubscribe reached b (%v) or own (%v)", b.unsubscribed(), own.unsubscribed())
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "a://x"}); err != nil {
		t.Fatalf("subscribe to a: %v", err)
	}
	sc.mu.Lock()
	asks := strings.Join(sc.asks, " ")
	sc.mu.Unlock()
	if asks != "b/nobody b/nobody b/nobody b/alice b/alice" {
		t.Fatalf("Do was asked for %s", asks)
	}
}
