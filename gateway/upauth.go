package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/auth"

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
