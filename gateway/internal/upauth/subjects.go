package upauth

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay"
)

// OwnContent (false on a nil Manager) reports whether the resources,
// prompts and completions of server are each subject's own: a user or
// exchange server without SharedContent. Requests for them go on the
// subject's own session ([Manager.WithSession]) behind the same gate as
// its calls ([Manager.Check]); the shared session only lists the catalog.
func (m *Manager) OwnContent(server string) bool {
	if !m.PerSubject(server) {
		return false
	}
	return !m.servers[server].SharedContent
}

// WithSession runs op on subject's own upstream session to server, as
// [Manager.CallTool] sends a call: the session is created on first use
// (user mode: with subject's token from the vault, refreshed there;
// exchange mode: with callerToken exchanged first, [ErrNoCallerToken]
// without one), and a session found lost by op is re-established once
// and op run again. op gets the context its requests must be sent with
// (exchange mode: it carries the token exchanged for callerToken, which
// the session's requests present, whatever another request of the same
// subject was exchanged for).
// A subject has two sessions to a server, each made when first needed:
// one for callers that answer a server's input requests themselves (ctx
// says: relay.PassesInput), which returns them to op, and one that asks
// the caller of ctx (relay.SubjectClient).
// Errors of the connection are wrapped in [SessionError]; op's are
// returned as they are. It does not gate: [Manager.Check] first.
func (m *Manager) WithSession(ctx context.Context, server, subject, callerToken string, op func(context.Context, *mcp.ClientSession) error) error {
	s := m.servers[server]
	if s == nil || !m.PerSubject(server) {
		return fmt.Errorf("upauth: server %q has no per-subject auth", server)
	}
	k := sessionKey{key{server, subject}, relay.PassesInput(ctx)}
	var bearer string
	if s.Mode == Exchange {
		var err error
		if bearer, err = m.exchange(ctx, s, subject, callerToken); err != nil {
			return err
		}
		ctx = withBearer(ctx, bearer) // op's requests carry this request's own token
	}
	for attempt := 0; ; attempt++ {
		sess, err := m.session(ctx, s, k, bearer)
		if err != nil {
			return &SessionError{Server: server, Err: err}
		}
		err = op(ctx, sess)
		if err == nil || ctx.Err() != nil || attempt > 0 || !lost(err) {
			return err
		}
		m.log.Info("upauth: session lost; reconnecting once", "server", server, "err", err)
		m.dropSession(k)
	}
}
