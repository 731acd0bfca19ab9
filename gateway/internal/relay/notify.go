package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

type progressRoute struct {
	st    *callerState
	token any
}

// progressKey is where a progress notification goes: the server the call
// was sent to and the token the relay made for it. A notification from
// any other server, with whatever token, matches no route.
type progressKey struct {
	server string
	token  string
}

// routeFrom delivers a progress or log notification that server sent on
// one of its sessions: progress by (server, token), log messages to the
// dedicated session's owner (nil for a shared session: nobody's).
func (r *Relay) routeFrom(server string, owner *callerState, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(params, &p) == nil {
			r.routeProgress(context.Background(), server, &p)
		}
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(params, &p) == nil {
			if owner != nil && owner.caller.handlers.log != nil {
				owner.caller.handlers.log(context.Background(), &p)
			} else {
				r.log.Debug("relay: upstream log message without a caller", "level", string(p.Level))
			}
		}
	}
}

// routeProgress delivers a progress notification server sent to the
// caller whose call to that server carries its token, with the caller's
// own token. Anything else (a token of another server's call, a guessed
// or stale one) is dropped and counted (Options.Dropped).
func (r *Relay) routeProgress(ctx context.Context, server string, params *mcp.ProgressNotificationParams) {
	tok, _ := params.ProgressToken.(string)
	r.mu.Lock()
	route, ok := r.progress[progressKey{server: server, token: tok}]
	r.mu.Unlock()
	if !ok || server == "" {
		if server != "" {
			r.log.Debug("relay: progress notification for no call of its server; dropped", "server", server)
			r.dropped(server, DroppedProgress)
		}
		return
	}
	if route.st.caller.handlers.progress == nil {
		return
	}
	p := *params
	p.ProgressToken = route.token
	route.st.caller.handlers.progress(ctx, &p)
}

// dropped counts a notification dropped because it belongs to nothing of
// the server that sent it.
func (r *Relay) dropped(server string, what Dropped) {
	if r.o.Dropped != nil {
		r.o.Dropped(server, what)
	}
}

// Dropped says what kind of upstream notification the relay dropped
// (Options.Dropped).
type Dropped string

// Notifications the relay drops.
const (
	// DroppedProgress: a notifications/progress whose token is not one
	// the relay sent to that server for a call in progress.
	DroppedProgress Dropped = "progress"
	// DroppedResourceUpdated: a notifications/resources/updated for a URI
	// the sending server does not publish, or that no subscriber of that
	// session subscribed to.
	DroppedResourceUpdated Dropped = "resource_updated"
)

// newProgressToken registers a route for the caller's progress token on a
// call to server and returns the token sent upstream (128 random bits: not
// guessable from any other call's), with its release.
func (r *Relay) newProgressToken(st *callerState, server string, token any) (string, func()) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	key := progressKey{server: server, token: "gatehouse/" + hex.EncodeToString(b[:])}
	r.mu.Lock()
	r.progress[key] = progressRoute{st: st, token: token}
	r.mu.Unlock()
	return key.token, func() {
		r.mu.Lock()
		delete(r.progress, key)
		r.mu.Unlock()
	}
}

// onResourceUpdated fans an update that server sent on its shared session
// out to the sessions subscribed to its URI (the go-sdk's servers track
// subscriptions), when server is the one that URI routes to. An update
// for a URI of another server, or one the relay does not route, is
// dropped and counted: a server speaks only for its own resources.
func (r *Relay) onResourceUpdated(ctx context.Context, server string, p *mcp.ResourceUpdatedNotificationParams) {
	if p == nil {
		return
	}
	if u, _ := r.routeURI(p.URI); u == nil || u.Name() != server {
		r.log.Debug("relay: resource update for a URI the server does not publish; dropped", "server", server)
		r.dropped(server, DroppedResourceUpdated)
		return
	}
	for _, s := range r.mcpServers() {
		_ = s.ResourceUpdated(context.WithoutCancel(ctx), p)
	}
}

// onListChanged tells every session that a server's resources or prompts
// changed. Tools are told by the gateway's refresh after the drift checks.
func (r *Relay) onListChanged(_ string, what toolset.ListChange) {
	for _, s := range r.mcpServers() {
		// The go-sdk announces list changes when its registry changes; a
		// placeholder added and removed at once is never listed (the
		// middleware answers lists) but makes it tell every session.
		switch what {
		case toolset.ResourcesChanged:
			s.AddResource(&mcp.Resource{URI: placeholderURI, Name: "placeholder"}, placeholderRead)
			s.RemoveResources(placeholderURI)
		case toolset.PromptsChanged:
			s.AddPrompt(&mcp.Prompt{Name: placeholderPrompt}, placeholderPrompts)
			s.RemovePrompts(placeholderPrompt)
		}
	}
}

const (
	placeholderURI    = "gatehouse:placeholder"
	placeholderPrompt = "gatehouse__placeholder"
)

func placeholderRead(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, mcp.ResourceNotFoundError(placeholderURI)
}

func placeholderPrompts(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{}, nil
}

// mcpServers returns the go-sdk servers the relay serves on (Setup).
func (r *Relay) mcpServers() []*mcp.Server {
	r.smu.Lock()
	defer r.smu.Unlock()
	return append([]*mcp.Server(nil), r.servers...)
}

// forwardMeta copies _meta without reserved keys and progressToken.
func forwardMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, reservedMetaPrefix) || k == "progressToken" {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// reservedMetaPrefix marks _meta keys the protocol reserves: a caller's are
// never forwarded.
const reservedMetaPrefix = "io.modelcontextprotocol/"
