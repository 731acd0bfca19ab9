package toolset

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/gatehouse-dev/gatehouse/trust"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/transport"
)

// Server is one MCP server to connect.
type Server struct {
	// Config is the server entry (from a plugin's mcp.json, or built in code
	// with PluginName and PluginRoot empty).
	Config plugin.ServerConfig
	// Prefix, when non-nil, replaces the server name in projected names
	// ("" projects the remote names alone). Nil means the server name,
	// suffixed when another server has the same name.
	Prefix *string
	// Filter keeps or hides tools by remote or projected name. Allow and
	// Block are mutually exclusive (Open returns an error if both are set).
	Filter Filter
	// AlwaysLoad exempts the server from the disclosure budget: its schemas
	// are always inline.
	AlwaysLoad bool
	// ID is the server's row ID in Options.Store; empty means
	// trust.RowID(Config).
	ID string

	// Transport, when set, replaces the transport built from Config (an
	// in-process server, a transport of your own): it is called for each
	// (re)connection. Config.Name still names the server; its other fields
	// are not used, and the egress guard does not apply.
	Transport func() (mcp.Transport, error)
	// OAuth, for a streamable HTTP server, authorizes it by the MCP
	// authorization flow: called once with the egress guard's client for
	// the server, it returns the handler set on the go-sdk's transport
	// (identity/upstream.Factory). Its calls never take the byte path.
	OAuth func(hc *http.Client) (auth.OAuthHandler, error)
}

// Options configures a Toolset. The zero value is usable; nil means defaults.
type Options struct {
	// AllowedHosts is the exact, case-insensitive list of hosts remote
	// servers may use (see package egress). Nil means no list: any host
	// passes, but the dialer still refuses loopback, private, link-local and
	// metadata addresses unless the URL host is a loopback literal. A
	// non-nil empty list allows no remote server.
	AllowedHosts []string
	// AllowedHostsFunc resolves the host list for Session (a per-session
	// list). It needs Session and excludes AllowedHosts.
	AllowedHostsFunc func(session string) []string
	// LookupIP resolves hostnames for the egress dialer (nil: the system
	// resolver). Tests map made-up names to 127.0.0.1 with it.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)

	// Session names the session (user, tenant...) this toolset acts for.
	// Required with Auth or AllowedHostsFunc.
	Session string
	// Auth returns the bearer token for a remote server in Session. It is
	// called before the handshake (so the token covers initialize and
	// tools/list) and again before every Call; the token is sent as
	// "Authorization: Bearer <token>" on every request to the server's own
	// origin and wins over a configured Authorization header. An empty token
	// sends no Authorization. An error fails the connection (a
	// connection-failure diagnostic) or the call (ErrAuthFailed). Tokens are
	// never logged or stored beyond the live connection.
	Auth func(ctx context.Context, server, session string) (token string, err error)

	// Budget is the disclosure budget per server in tokens (4 characters a
	// token); 0 means 20,000.
	Budget int
	// SearchTool adds mcp__search_tools (SearchToolName) to the tool map:
	// Call answers it with Search, so a model handed it (and any tools you
	// choose) finds the rest and calls them by name.
	SearchTool bool
	// SearchModel, when set, is the static embedding model Search re-ranks
	// its best candidates with (LoadSearchModel; docs/search.md). Nil:
	// words only.
	SearchModel *SearchModel
	// ConnectTimeout bounds each server's connection (launch or dial,
	// handshake and tools/list); 0 means 60 s.
	ConnectTimeout time.Duration
	// StopGrace is how long Close waits for a stdio server after closing
	// its stdin, and again after SIGTERM, before SIGKILL; 0 means 2 s.
	StopGrace time.Duration
	// DisallowStdio refuses subprocesses: stdio entries get an
	// unsupported-transport diagnostic instead of being launched.
	DisallowStdio bool

	// Env is the base environment of stdio servers; nil means this
	// process's environment (os.Environ), which bare commands need for PATH.
	// The configured env overlays it, then PLUGIN_ROOT and PLUGIN_DATA are
	// set. Pass a non-nil slice to launch servers with less of your
	// environment: MinimalEnv(os.Environ(), nil) is what the gateway
	// passes.
	Env []string
	// Stderr receives the stderr of stdio servers as they write it.
	Stderr io.Writer
	// StderrLog, when Stderr is nil, receives the stderr of stdio servers
	// line by line as data: one warning record per line, message
	// "upstream stderr", attributes "server" and "line" (at most 4 KiB;
	// "truncated" when it was longer), at most 100 lines at once and 20 a
	// second per child ("dropped" counts the rest). A child that prints
	// something that looks like a log record only fills the "line"
	// string. Stderr and StderrLog nil: stderr is discarded.
	StderrLog *slog.Logger
	// Logger receives the toolset's logs; nil discards them. Server
	// instructions are never logged.
	Logger *slog.Logger

	// Store keeps server rows (the last published catalogue) and trust
	// baselines (see package pin). store.ServerStore satisfies it (SQLite,
	// PostgreSQL, memory: the caller picks). Nil means nothing is kept
	// beyond this Toolset: drift is still judged on every re-listing (a
	// reconnect), against the first listing this Toolset saw.
	Store trust.Store
	// Wake builds the tool map from the catalogues in Store with no
	// connection, launch or request to any server, then reconciles in the
	// background (see Reconcile). A server without a row in Store gets a
	// connection-failure diagnostic and is not connected: a wake is never a
	// cold start.
	Wake bool
	// DeferReconcile, with Wake, does not start the background reconcile:
	// each server is reconciled on its first Call, or all at once by
	// Reconcile.
	DeferReconcile bool
	// OnChange, when set, is called after the tool map changed after it
	// was first built (a reconcile, a reconnect's re-listing, a re-trust
	// noticed by WatchTrust or made by Retrust, a server skipped at the
	// first load listed by a retry). It is called from the
	// goroutine that made the change, holding no lock of the Toolset: it
	// may call Tools.
	OnChange func()
	// Recheck, when positive, re-lists every connected server (and every
	// served one whose session was lost: it connects afresh) in the
	// background about this often (jittered, a few servers at a time,
	// coalesced with the servers' list_changed announcements) and judges
	// each listing against its baseline like any other: a server that
	// changes a tool without announcing it is caught within one interval.
	// A listing identical to the last one costs no store write and no
	// OnChange. Zero turns it off (the library's default; the gateway's
	// drift.recheck defaults to 60s). A server the first load could not
	// reach (connection-failure) is tried again from a second on, doubling
	// up to Recheck or a minute, until listed, while the Toolset is open.
	Recheck time.Duration
	// Instance names this process in the drift observations it records
	// in Store (store.Observation.SeenBy): a gateway's executor instance,
	// for example. Empty means "<hostname>:<pid>".
	Instance string
	// SessionHooks, when set, see what the shared upstream sessions receive
	// beyond tools (a relay forwards it to its callers).
	SessionHooks *SessionHooks
	// ClientCapabilities are the client capabilities the shared upstream
	// sessions announce (sampling, elicitation and roots; nil: none). A
	// server may list some tools only to clients that announce one
	// (server-everything's sampling, elicitation and roots tools): those
	// are then listed, judged and pinned with the rest. Announce only what
	// the sessions' requests are answered for: a relay that routes them
	// back to its callers (SessionHooks.Middleware) sets them; the
	// Toolset itself refuses roots/list and has no handler for the others.
	ClientCapabilities *mcp.ClientCapabilities

	// ProtocolVersion, when set, is the MCP revision every upstream session
	// asks for (e.g. "2025-11-25"); empty lets the go-sdk negotiate, newest
	// first. Forwarding server-to-client requests (sampling, elicitation,
	// roots) and log levels needs a stateful revision such as 2025-11-25.
	ProtocolVersion string
}

const (
	defaultConnectTimeout = 60 * time.Second
	defaultStopGrace      = 2 * time.Second
)

// CallInfo carries what a caller knows about a call.
type CallInfo struct {
	// RunID and ToolCallID, when both set, become the call's
	// _meta.idempotencyKey ("runID:toolCallID").
	RunID      string
	ToolCallID string
	// Meta is copied into the call's _meta. Reserved keys
	// (io.modelcontextprotocol/...) are dropped; the map is never modified.
	Meta map[string]any
}

// State says whether a tool may be called.
type State string

// Tool states.
const (
	// Active tools are listed and callable.
	Active State = "active"
	// Quarantined tools have drifted from their trusted contract (see the
	// pin package); they are listed with our text and refused.
	Quarantined State = "quarantined"
)

// ToolInfo is one tool as an agent sees it. Its JSON form is the tool object
// of `gatehouse tools --json` (docs/reference/cli.md).
type ToolInfo struct {
	// Name is the projected, provider-legal name; calls use it.
	Name string `json:"name"`
	// Server is the configured name of the server that offers the tool
	// (empty for mcp__describe_tool, which the toolset answers).
	Server string `json:"server"`
	// Plugin is the plugin that declared the server, if any.
	Plugin string `json:"plugin,omitempty"`
	// RemoteName is the tool's name on its server.
	RemoteName string `json:"remoteName"`
	// Title is the tool's sanitized title, if any.
	Title string `json:"title,omitempty"`
	// Description is the sanitized description.
	Description string `json:"description"`
	// InputSchema is the input schema at the disclosure tier.
	InputSchema map[string]any `json:"inputSchema"`
	// Disclosure is the tier: inline, names or bare.
	Disclosure Tier `json:"disclosure"`
	// State is active or quarantined.
	State State `json:"state"`
	// ServerID is the server's row ID in the store (see trust.RowID).
	ServerID string `json:"serverId,omitempty"`
	// Annotations are the server's hints, as information only: nothing in
	// Gatehouse decides on them.
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	// ContractHash is the SHA-256 (hex) of the canonical JSON of the tool's
	// name, title, description, input and output schema and annotations, as
	// the server sent them.
	ContractHash string `json:"contractHash,omitempty"`
	// Contract is the fingerprint (pin.ToolFingerprint) of the tool's
	// trusted contract: for an active tool the one it publishes (the
	// baseline's, or first seen), for a quarantined one the baseline's.
	// An approval of a call of the tool is bound to it
	// (durable.Call.Contract): after a trust that changes it, the call
	// asks again. Empty for the toolset's own tools.
	Contract string `json:"contract,omitempty"`
}

// Summary describes one tool for guards and UIs (see Describe): its full
// sanitized schema whatever the disclosure tier.
type Summary struct {
	Name         string               `json:"name"`
	Server       string               `json:"server"`
	RemoteName   string               `json:"remoteName"`
	Description  string               `json:"description"`
	InputSchema  map[string]any       `json:"inputSchema"`
	OutputSchema map[string]any       `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
	ContractHash string               `json:"contractHash"`
	State        State                `json:"state"`
}

// PluginServers returns the servers of a loaded plugin, with default
// prefixes and no filter.
func PluginServers(p *plugin.Plugin) []Server {
	if p == nil {
		return nil
	}
	out := make([]Server, 0, len(p.Servers))
	for _, c := range p.Servers {
		out = append(out, Server{Config: c})
	}
	return out
}

// MinimalEnv returns the entries of environ (typically os.Environ()) that
// a stdio server needs and no more: PATH, HOME, TMPDIR, TZ, LANG and
// LC_*, plus those extra names (an exact name, or a prefix followed by
// "*": "AWS_*"). Entries named GATEHOUSE_* (the gateway's own settings,
// such as GATEHOUSE_STORE, which may hold a password) are never kept,
// whatever extra says. The result is never nil, so that Options.Env set
// to it means exactly it. A server's configured env overlays it as usual.
func MinimalEnv(environ, extra []string) []string { return transport.MinimalEnv(environ, extra) }
