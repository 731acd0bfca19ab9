package server

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/refusal"
)

const methodInitialize = "initialize"

// CodeRateLimited is the JSON-RPC error code of a request other than
// tools/call (an initialize) refused by the rate limit. Its data is the
// refusal's fields: {"code": "rate_limited", "retryable": true,
// "retryAfterMs": N}. A gateway answers the requests it forwards with the
// same code.
const CodeRateLimited = -32029

// CodeSessionLimit is the JSON-RPC error code of an initialize refused
// because its subject already has [Options.MaxSessionsPerSubject] open
// sessions. Its data is {"maxPerSubject": N}.
const CodeSessionLimit = -32030

// sessionBook counts the open sessions of each subject. A session is
// counted when its initialize is admitted and uncounted when it ends
// (DELETE, idle timeout, transport closed, Server.Close).
type sessionBook struct {
	max int

	mu   sync.Mutex
	open map[*mcp.ServerSession]Subject
	per  map[Subject]int
}

func newSessionBook(max int) *sessionBook {
	return &sessionBook{max: max, open: map[*mcp.ServerSession]Subject{}, per: map[Subject]int{}}
}

// counted reports whether ss holds a slot.
func (b *sessionBook) counted(ss *mcp.ServerSession) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.open[ss]
	return ok
}

// acquire gives ss a slot of subject's, or reports false when subject has
// max open sessions. Before refusing, it forgets the sessions that are no
// longer live (a session ends before the goroutine that releases its slot
// runs), so a slot freed by a DELETE is free when the DELETE is answered.
func (b *sessionBook) acquire(ss *mcp.ServerSession, subject Subject, live iter.Seq[*mcp.ServerSession]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.per[subject] >= b.max {
		alive := map[*mcp.ServerSession]bool{}
		for s := range live {
			alive[s] = true
		}
		for s, sub := range b.open {
			if !alive[s] {
				b.releaseLocked(s, sub)
			}
		}
		if b.per[subject] >= b.max {
			return false
		}
	}
	b.open[ss] = subject
	b.per[subject]++
	return true
}

// release frees ss's slot, if it holds one.
func (b *sessionBook) release(ss *mcp.ServerSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sub, ok := b.open[ss]; ok {
		b.releaseLocked(ss, sub)
	}
}

func (b *sessionBook) releaseLocked(ss *mcp.ServerSession, subject Subject) {
	delete(b.open, ss)
	if b.per[subject]--; b.per[subject] <= 0 {
		delete(b.per, subject)
	}
}

// initialize admits a session: the subject's rate limit spends one call on
// it, then the session takes one of the subject's MaxSessionsPerSubject
// slots until it ends. A refusal is a JSON-RPC error the caller's client
// reports as the reason it could not connect; the go-sdk then closes the
// uninitialized session. A caller Identify cannot place is counted as the
// anonymous subject.
func (s *Server) initialize(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss != nil && s.sessions != nil && s.sessions.counted(ss) {
		return next(ctx, method, req) // a second initialize: the go-sdk refuses it
	}
	subject, _ := s.identify(ctx, false, req)
	if s.limiter != nil {
		ok, retryAfter, err := s.limiter.allow(ctx, subject, methodInitialize)
		if err != nil {
			s.logger.Error("server: rate limit unavailable; initialize refused", "err", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the rate limit could not be checked; the session was not opened"}
		}
		if !ok {
			return nil, rateLimitedRPC(retryAfter)
		}
	}
	if ss == nil || s.sessions == nil {
		return next(ctx, method, req)
	}
	if x := s.shared.Load(); x != nil && ss.ID() != "" {
		// Sessions in a store are counted there: every replica's.
		n, err := x.st.CountSessions(ctx, string(subject), x.now())
		if err != nil {
			s.logger.Error("server: the session cap could not be checked; initialize refused", "err", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session cap could not be checked; the session was not opened"}
		}
		if n >= s.sessions.max {
			return nil, s.sessionLimit()
		}
	}
	if !s.sessions.acquire(ss, subject, s.remote.Sessions()) {
		return nil, s.sessionLimit()
	}
	go func() {
		_ = ss.Wait()
		s.sessions.release(ss)
	}()
	res, err := next(ctx, method, req)
	if err != nil {
		s.sessions.release(ss) // not initialized: the go-sdk closes it
	}
	return res, err
}

// sessionLimit is the JSON-RPC error of an initialize past
// MaxSessionsPerSubject.
func (s *Server) sessionLimit() error {
	data, _ := json.Marshal(map[string]int{"maxPerSubject": s.sessions.max})
	return &jsonrpc.Error{Code: CodeSessionLimit, Data: data, Message: fmt.Sprintf(
		"too many open sessions: this caller already has %d, the most allowed; close one (HTTP DELETE) or wait for an idle one to expire", s.sessions.max)}
}

// rateLimitedRPC is the JSON-RPC error of a request refused by the rate
// limit.
func rateLimitedRPC(retryAfter time.Duration) error {
	retryAfter = max(retryAfter, time.Millisecond)
	data, _ := json.Marshal(map[string]any{"code": refusal.RateLimited, "retryable": true, "retryAfterMs": retryAfter.Milliseconds()})
	return &jsonrpc.Error{Code: CodeRateLimited, Data: data,
		Message: fmt.Sprintf("[%s] too many requests; retry in %v", refusal.RateLimited, retryAfter.Round(time.Millisecond))}
}
