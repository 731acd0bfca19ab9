package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// Remote returns the go-sdk client transport of a streamable HTTP or SSE
// server, Detached for life: the standalone SSE stream of a streamable
// HTTP server (list_changed, resources/updated) and the event stream of a
// legacy SSE server are opened with the Connect context and must outlive
// the connect timeout. A streamable HTTP server is reached through sdk
// (see Limited) with events of at most MaxAnswer bytes, an SSE server
// through hc with events of at most MaxAnswer bytes too. Any other
// transport type is an error.
//
// oauth, when set, is the streamable HTTP transport's OAuthHandler (the MCP
// authorization flow, package identity/upstream).
func Remote(life context.Context, cfg plugin.ServerConfig, hc, sdk *http.Client, oauth auth.OAuthHandler) (mcp.Transport, error) {
	switch cfg.Type {
	case plugin.TransportStreamableHTTP:
		return &Detached{Inner: &mcp.StreamableClientTransport{
			Endpoint:     cfg.URL,
			HTTPClient:   sdk,
			MaxEventSize: MaxAnswer,
			OAuthHandler: oauth,
		}, Life: life}, nil
	case plugin.TransportSSE:
		// The legacy transport's answers come on its one event stream: an
		// event past MaxAnswer ends that stream (the go-sdk's reader cannot
		// resynchronize it), a lost connection.
		return &Detached{Inner: &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: hc, MaxEventSize: MaxAnswer}, Life: life}, nil
	}
	return nil, fmt.Errorf("unsupported transport %q", cfg.Type)
}

// Limited returns a copy of hc whose answers go through AnswerLimit, at
// most MaxAnswer bytes each (over http.DefaultTransport when hc has no
// transport): the HTTP client for the go-sdk's streamable client.
func Limited(hc *http.Client) *http.Client {
	sdk := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	sdk.Transport = &AnswerLimit{Base: base, Max: MaxAnswer}
	return &sdk
}

// SessionLost reports errors after which a new session may succeed: the
// session is missing (an HTTP server restarted), or the connection closed
// (a stdio server died).
func SessionLost(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) // a dead stdio child: the request was never read
}

// WithoutValues returns a context with ctx's deadline and cancellation but
// none of its values: upstream sessions outlive the request that opened
// them and must not carry its values (the go-sdk's HTTP server puts the
// caller's negotiated revision in the request context, and its HTTP
// client sends that as Mcp-Protocol-Version until the upstream session is
// initialized).
func WithoutValues(ctx context.Context) context.Context { return valuesFree{ctx} }

type valuesFree struct{ context.Context }

func (valuesFree) Value(any) any { return nil }

// Refuse returns a receiving middleware that answers method with err
// without passing it on: a shared session refuses roots/list, since the
// client's own (empty) list would be a lie about whoever it serves.
func Refuse(method string, err error) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
			if m == method {
				return nil, err
			}
			return next(ctx, m, req)
		}
	}
}
