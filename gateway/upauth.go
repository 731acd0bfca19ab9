package gateway

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/upauth"
	"github.com/gatehouse-dev/gatehouse/gateway/relay"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// subjectSender sends a call to a server with auth: user or exchange on
// the subject's own upstream session (gateway/internal/upauth).
type subjectSender struct {
	m              *upauth.Manager
	subject, token string // token: the caller's own (exchange)
}

func (s subjectSender) send(ctx context.Context, tg toolset.Target, c relay.Call) (reply, error) {
	res, err := s.m.Send(ctx, tg, c, s.subject, s.token)
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
