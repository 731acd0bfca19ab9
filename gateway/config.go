package gateway

import (
	"log/slog"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
)

// The configuration lives in gateway/internal/config; these names are its
// public face. docs/gateway.md lists every key and its default.
type (
	// Config is the gateway configuration of docs/gateway.md (Config fields). It is read
	// from YAML (JSON is valid YAML); unknown fields are errors, so a typo
	// never silently disables a protection. Build one with LoadConfig or
	// ParseConfig, which apply the defaults and validate every field.
	Config = config.Config
	// ConfigError is a configuration mistake: it names the file, the field
	// and the fix.
	ConfigError = config.Error

	// ServerEntry is one inline server: the mcp.json server shape plus an
	// optional prefix for its projected names.
	ServerEntry = config.ServerEntry
	// Auth configures who may call the MCP endpoint: static bearer tokens,
	// OAuth access tokens (auth.oauth, with auth.resource), or both.
	Auth = config.Auth
	// OAuth configures the authorization server whose JWT access tokens
	// the gateway accepts.
	OAuth = config.OAuth
	// Token is one static bearer token, stored as the SHA-256 hex of the
	// token.
	Token = config.Token
	// Tools holds the tool-level policy.
	Tools = config.Tools
	// RateLimit is a per-subject fixed-window limit shared through the
	// store.
	RateLimit = config.RateLimit
	// Disclosure configures the schema disclosure budget.
	Disclosure = config.Disclosure
	// Firewall configures the MCP firewall.
	Firewall = config.Firewall
	// Journal tunes the effect journal.
	Journal = config.Journal
	// Approvals tunes approvals.
	Approvals = config.Approvals
	// HTTP tunes how the MCP endpoint answers callers.
	HTTP = config.HTTP
	// Sessions bounds the MCP sessions callers keep open, and the upstream
	// sessions of their own they hold.
	Sessions = config.Sessions
	// Metrics configures the Prometheus endpoint.
	Metrics = config.Metrics
	// Drift tunes how drift is caught while the gateway runs
	// (drift.recheck).
	Drift = config.Drift
	// Search configures tool search (search.enabled, search.limit).
	Search = config.Search
)

// Defaults of the gateway config.
const (
	DefaultListen           = config.DefaultListen
	DefaultStore            = config.DefaultStore
	DefaultBudgetTokens     = config.DefaultBudgetTokens
	DefaultRateLimitWindow  = config.DefaultRateLimitWindow
	DefaultShutdownTimeout  = config.DefaultShutdownTimeout
	DefaultJournalLease     = config.DefaultJournalLease
	DefaultJournalTTL       = config.DefaultJournalTTL
	DefaultApprovalTTL      = config.DefaultApprovalTTL
	DefaultUpstreamProtocol = config.DefaultUpstreamProtocol
	// DefaultMaxSessionsPerSubject is sessions.maxPerSubject's default.
	DefaultMaxSessionsPerSubject = config.DefaultMaxSessionsPerSubject
	// DefaultDriftRecheck is drift.recheck's default.
	DefaultDriftRecheck = config.DefaultDriftRecheck
	// DefaultSearchLimit is search.limit's default.
	DefaultSearchLimit = config.DefaultSearchLimit
)

// LoadConfig reads and validates the config file at path. Relative paths
// in it resolve against the file's directory. A mistake is a *ConfigError.
func LoadConfig(path string) (*Config, error) { return config.Load(path) }

// ParseConfig parses and validates config bytes. file names the source in
// errors; dir is where relative paths resolve. A mistake is a
// *ConfigError.
func ParseConfig(data []byte, file, dir string) (*Config, error) {
	return config.Parse(data, file, dir)
}

// warnUnprotected logs one warning for each protection the config leaves
// off, naming the config field that turns it on. (No auth is warned of
// where the listener is chosen: it keeps the gateway on loopback.)
func warnUnprotected(log *slog.Logger, cfg *Config) {
	if cfg.RateLimit == nil {
		log.Warn("gateway: not protected: rate limit (rateLimit is not set): a caller may call without limit; set rateLimit: {maxCalls: N, window: 60s}")
	}
	if cfg.Sessions.MaxPerSubject <= 0 {
		log.Warn("gateway: not protected: sessions per subject (sessions.maxPerSubject is not set): a caller may open sessions without limit; set sessions: {maxPerSubject: N}")
	}
}
