package gateway

import (
	"log/slog"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
)

// The configuration lives in gateway/internal/config; Config and
// ConfigError are its public face (a Config's fields are set by name:
// cfg.HTTP.Listen). docs/gateway.md lists every key and its default.
type (
	// Config is the gateway configuration of docs/gateway.md (Config fields). It is read
	// from YAML (JSON is valid YAML); unknown fields are errors, so a typo
	// never silently disables a protection. Build one with LoadConfig or
	// ParseConfig, which apply the defaults and validate every field.
	Config = config.Config
	// ConfigError is a configuration mistake: it names the file, the field
	// and the fix.
	ConfigError = config.Error
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
