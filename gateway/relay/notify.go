package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

type progressRoute struct {
	st    *callerState
	token any
}

// routeNotification delivers an upstream progress or log notification to
// its caller: progress by token, log messages to the dedicated session's
// owner (nil for a shared session: nobody's).
func (r *Relay) routeNotification(owner *callerState, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(params, &p) == nil {
			r.routeProgress(context.Background(), &p)
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

// routeProgress delivers an upstream progress notification to the caller
// whose call carries its token, with the caller's own token.
func (r *Relay) routeProgress(ctx context.Context, params *mcp.ProgressNotificationParams) {
	key, ok := progressKey(params.ProgressToken)
	if !ok {
		return
	}
	r.mu.Lock()
	route, ok := r.progress[key]
	r.mu.Unlock()
	if !ok || route.st.caller.handlers.progress == nil {
		return
	}
	p := *params
	p.ProgressToken = route.token
	route.st.caller.handlers.progress(ctx, &p)
}

func progressKey(tok any) (string, bool) {
	s, ok := tok.(string)
	return s, ok && strings.HasPrefix(s, "gatehouse/")
}

// newProgressToken registers a route for the caller's progress token and
// returns the token sent upstream, with its release.
func (r *Relay) newProgressToken(st *callerState, token any) (string, func()) {
	key := "gatehouse/" + strconv.FormatUint(r.seq.Add(1), 36)
	r.mu.Lock()
	r.progress[key] = progressRoute{st: st, token: token}
	r.mu.Unlock()
	return key, func() {
		r.mu.Lock()
		delete(r.progress, key)
		r.mu.Unlock()
	}
}

// onResourceUpdated fans an upstream update out to the sessions subscribed
// to its URI (the go-sdk's servers track subscriptions).
func (r *Relay) onResourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
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
