package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

func TestRemote(t *testing.T) {
	life := context.Background()
	hc, sdk := &http.Client{}, &http.Client{}
	tr, err := Remote(life, plugin.ServerConfig{Type: plugin.TransportStreamableHTTP, URL: "https://h.example/mcp"}, hc, sdk, nil)
	d, ok := tr.(*Detached)
	if err != nil || !ok || d.Life != life {
		t.Fatalf("streamable: %T %v", tr, err)
	}
	st, ok := d.Inner.(*mcp.StreamableClientTransport)
	if !ok || st.Endpoint != "https://h.example/mcp" || st.HTTPClient != sdk || st.MaxEventSize != MaxAnswer {
		t.Fatalf("streamable inner %#v", d.Inner)
	}
	tr, err = Remote(life, plugin.ServerConfig{Type: plugin.TransportSSE, URL: "https://h.example/sse"}, hc, sdk, nil)
	if d, ok = tr.(*Detached); err != nil || !ok {
		t.Fatalf("sse: %T %v", tr, err)
	}
	if se, ok := d.Inner.(*mcp.SSEClientTransport); !ok || se.Endpoint != "https://h.example/sse" || se.HTTPClient != hc || se.MaxEventSize != MaxAnswer {
		t.Fatalf("sse inner %#v", d.Inner)
	}
	for _, typ := range []plugin.Transport{plugin.TransportStdio, "websocket", ""} {
		if tr, err := Remote(life, plugin.ServerConfig{Type: typ}, hc, sdk, nil); tr != nil || err == nil || err.Error() != fmt.Sprintf("unsupported transport %q", typ) {
			t.Errorf("%q: %v %v", typ, tr, err)
		}
	}
}

type roundTripper struct{}

func (roundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("unused")
}

func TestLimited(t *testing.T) {
	base := roundTripper{}
	hc := &http.Client{Transport: base, Timeout: time.Minute}
	sdk := Limited(hc)
	l, ok := sdk.Transport.(*AnswerLimit)
	if sdk == hc || !ok || l.Base != base || l.Max != MaxAnswer || sdk.Timeout != time.Minute || hc.Transport != base {
		t.Fatalf("limited %#v (from %#v)", sdk, hc)
	}
	if l, ok := Limited(&http.Client{}).Transport.(*AnswerLimit); !ok || l.Base != http.DefaultTransport {
		t.Fatalf("default base: %#v", l)
	}
}

func TestSessionLost(t *testing.T) {
	for _, err := range []error{mcp.ErrSessionMissing, mcp.ErrConnectionClosed, io.EOF, io.ErrUnexpectedEOF, syscall.EPIPE,
		fmt.Errorf("calling: %w", mcp.ErrConnectionClosed)} {
		if !SessionLost(err) {
			t.Errorf("%v: not lost", err)
		}
	}
	for _, err := range []error{nil, errors.New("boom"), context.Canceled, ErrAnswerTooLarge} {
		if SessionLost(err) {
			t.Errorf("%v: lost", err)
		}
	}
}

type key struct{}

func TestWithoutValues(t *testing.T) {
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Hour))
	ctx := WithoutValues(parent)
	if ctx.Value(key{}) != nil {
		t.Fatal("a value reached the context")
	}
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(func() time.Time { d, _ := parent.Deadline(); return d }()) {
		t.Fatal("deadline lost")
	}
	cancel()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("cancellation lost")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal(ctx.Err())
	}
}
