package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/upauth"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// subjectSender sends a call to a server with auth: user or exchange on
// the subject's own upstream session (gateway/internal/upauth).
// A server's input requests (SEP-2322) are the call's caller's, as on a
// shared session: passed on to one that takes input (the pipeline seals
// their state), asked of any other (relay.SubjectClient).
type subjectSender struct {
	m              *upauth.Manager
	r              *relay.Relay
	subject, token string // token: the caller's own (exchange)
}

func (s subjectSender) send(ctx context.Context, tg toolset.Target, c relay.Call) (reply, error) {
	res, err := s.m.Send(s.r.WithCaller(ctx, c.Caller), tg, c, s.subject, s.token)
	return reply{result: res, via: "subject"}, err
}

// callerToken is the caller's own OAuth token (exchange), "" for none.
func callerToken(ti *auth.TokenInfo) string {
	if ti == nil {
		return ""
	}
	t, _ := ti.Extra[bearer.RawTokenKey].(string)
	return t
}

// sessionJudge judges the subjects' own upstream sessions
// (upauth.Options.Judge) as every other session of a server is: by the
// relay's toolset (toolset.Upstream.Judge), against the server's trusted
// contracts.
type sessionJudge struct{ g *Gateway }

func (j sessionJudge) upstream(ctx context.Context, server string) (*toolset.Upstream, error) {
	if j.g.ts != nil {
		ups, err := j.g.ts.Upstreams(ctx)
		if err != nil {
			return nil, err
		}
		for _, u := range ups {
			if u.Name() == server {
				return u, nil
			}
		}
	}
	return nil, &toolset.Error{Code: toolset.CodeConnectionFailed, Server: server, Err: errors.New("the server is not served, so its session cannot be judged")}
}

func (j sessionJudge) JudgeSession(ctx context.Context, server string, sess *mcp.ClientSession) error {
	u, err := j.upstream(ctx, server)
	if err != nil {
		_ = sess.Close()
		return err
	}
	return u.Judge(ctx, sess)
}

func (j sessionJudge) SessionChanged(server string, sess *mcp.ClientSession) {
	if u, err := j.upstream(context.Background(), server); err == nil {
		u.Changed(sess)
	}
}

// subjectContent reaches the content of the servers with auth: user or
// exchange (relay.Options.Subjects): a caller's resources/read,
// prompts/get and completion/complete of such a server go on its
// subject's own upstream session, behind the gate of its tool calls
// (upauth.Manager.Check: auth_required with a connect URL until the
// subject connects; the store read on every request, so a revoked
// connection is refused at once). The shared (service) session only
// lists the catalog, unless the server has sharedContent.
type subjectContent struct {
	m   *upauth.Manager
	log *slog.Logger
}

func (c subjectContent) Own(server string) bool { return c.m.OwnContent(server) }

func (c subjectContent) Do(ctx context.Context, server, subject string, req mcp.Request, op func(context.Context, *mcp.ClientSession) error) error {
	r, err := c.m.Check(ctx, server, subject)
	if err != nil {
		c.log.Error("gateway: reading a subject's connection; request refused", "server", server, "err", err)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the caller's connection to the server could not be read; the request was not forwarded"}
	}
	if r != nil {
		return refusalRPC(r)
	}
	var token string // the caller's own (exchange)
	if ex := req.GetExtra(); ex != nil {
		token = callerToken(ex.TokenInfo)
	}
	err = c.m.WithSession(ctx, server, subject, token, op)
	var se *upauth.SessionError
	var te *toolset.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, upauth.ErrNoCallerToken):
		return refusalRPC(&refusal.Error{Code: refusal.Denied, Err: err,
			Message: fmt.Sprintf("server %s needs the caller's OAuth token to exchange; this caller has none", server)})
	case errors.As(err, &te) && te.Code == toolset.CodeQuarantined: // the session's listing drifted: nothing was sent
		return te
	case errors.As(err, &se):
		return &toolset.Error{Code: toolset.CodeConnectionFailed, Server: server, Err: se.Err}
	}
	return err // the upstream's answer (a JSON-RPC error passed on)
}

// refusalRPC is a refusal as the JSON-RPC error of a forwarded request
// (codeRefusedRPC).
func refusalRPC(r *refusal.Error) *jsonrpc.Error {
	data, _ := json.Marshal(r.Result().StructuredContent)
	return &jsonrpc.Error{Code: codeRefusedRPC, Message: r.Text(), Data: data}
}

// codeRefusedRPC is the JSON-RPC error code of a forwarded request (not a
// tools/call: resources/read, prompts/get, completion/complete) that the
// gateway refused before it reached an upstream, for a refusal other than
// rate_limited (codeRateLimitedRPC): auth_required (the caller has not
// connected its own account to a server with auth: user; data carries the
// connectURL) or denied (a server with auth: exchange, a caller without an
// OAuth token). Its message is the refusal's text and its data the
// refusal's structured content ({"code", "retryable", "connectURL"}), as
// a refused tools/call carries them.
const codeRefusedRPC = -32032
