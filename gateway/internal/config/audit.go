package config

import (
	"fmt"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
)

// Defaults of audit.
const (
	// DefaultAuditRetain is audit.retain's default (docs/gateway.md, Config fields).
	DefaultAuditRetain = 90 * 24 * time.Hour
	// DefaultAuditCheckpoint is audit.checkpoint's default.
	DefaultAuditCheckpoint = 5 * time.Minute
	// MinAuditCheckpoint is the shortest audit.checkpoint.
	MinAuditCheckpoint = time.Second
)

// Audit configures the audit trail (docs/audit.md). Its YAML form is
// audit: {enabled: true, retain: 90d, checkpoint: 5m, signingKeyFile: PATH}
// or signingKeyEnv: NAME instead of the file.
type Audit struct {
	// Enabled turns the audit trail on (the default) or off.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Retain is how long entries are kept: a duration such as 90d or 36h;
	// 0 keeps them forever. Retention cuts a chain only behind a
	// checkpoint, so a few older entries may stay. Default 90d.
	Retain time.Duration `yaml:"retain" json:"retain"`
	// Checkpoint is how often the gateway checkpoints its chain when it
	// wrote entries since (and after every 10,000 entries, and at
	// shutdown): a duration of at least 1s, default 5m.
	Checkpoint time.Duration `yaml:"checkpoint" json:"checkpoint"`
	// SigningKeyFile is the Ed25519 private key (PEM PKCS #8, or base64
	// of the 32-byte seed) that signs checkpoints, relative to the
	// config's directory; SigningKeyEnv names an environment variable
	// holding the same text. At most one; neither leaves checkpoints
	// unsigned.
	SigningKeyFile string `yaml:"signingKeyFile" json:"signingKeyFile,omitempty"`
	SigningKeyEnv  string `yaml:"signingKeyEnv" json:"signingKeyEnv,omitempty"`

	// The values as written (nil when absent); validate reads them.
	enabled, retain, checkpoint, keyFile, keyEnv *yaml.Node
	// shape is a mistake in audit's own shape, reported by validate.
	shape *Error
}

// auditFix is the fix of a mistake in audit's shape.
const auditFix = "write audit: {enabled: true, retain: 90d, checkpoint: 5m, signingKeyFile: audit.key} (every field optional)"

// UnmarshalYAML reads audit's mapping, keeping its values as written for
// validate (see Drift.UnmarshalYAML).
func (a *Audit) UnmarshalYAML(n *yaml.Node) error {
	*a = Audit{}
	if n.Kind != yaml.MappingNode {
		a.shape = &Error{Field: "audit", Msg: "must be a mapping", Fix: auditFix}
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var dst **yaml.Node
		switch {
		case k.Kind != yaml.ScalarNode:
		case k.Value == "enabled":
			dst = &a.enabled
		case k.Value == "retain":
			dst = &a.retain
		case k.Value == "checkpoint":
			dst = &a.checkpoint
		case k.Value == "signingKeyFile":
			dst = &a.keyFile
		case k.Value == "signingKeyEnv":
			dst = &a.keyEnv
		}
		if dst == nil {
			a.shape = &Error{Field: "audit", Msg: fmt.Sprintf("unknown field %q", k.Value),
				Fix: "audit has the fields enabled, retain, checkpoint, signingKeyFile and signingKeyEnv: " + auditFix}
			return nil
		}
		if *dst != nil {
			a.shape = &Error{Field: "audit." + k.Value, Msg: "given twice", Fix: auditFix}
			return nil
		}
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		*dst = v
	}
	return nil
}

// checkAudit resolves audit: enabled a boolean (default true), retain a
// duration or 0 (default 90d), checkpoint a duration of at least 1s
// (default 5m), at most one of signingKeyFile (resolved against Dir) and
// signingKeyEnv (a variable name). The key itself is read by the gateway
// when it starts.
func (c *Config) checkAudit() error {
	a := &c.Audit
	if a.shape != nil {
		return c.errf(a.shape.Field, a.shape.Fix, "%s", a.shape.Msg)
	}
	a.Enabled, a.Retain, a.Checkpoint = true, DefaultAuditRetain, DefaultAuditCheckpoint
	if n := a.enabled; n != nil {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&a.Enabled) != nil {
			return c.errf("audit.enabled", "use true (the default) or false", "%s is not true or false", shown(n))
		}
	}
	if n := a.retain; n != nil {
		fix := "use a duration such as 90d or 36h (default 90d), or 0 to keep every entry"
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return c.errf("audit.retain", fix, "%s is not a duration", shown(n))
		}
		if n.Value == "0" {
			a.Retain = 0
		} else {
			d, err := audit.ParseDuration(n.Value)
			if err != nil {
				return c.errf("audit.retain", fix, "%v", err)
			}
			a.Retain = d
		}
	}
	if n := a.checkpoint; n != nil {
		fix := "use a duration of at least 1s such as 5m (default 5m)"
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return c.errf("audit.checkpoint", fix, "%s is not a duration", shown(n))
		}
		d, err := audit.ParseDuration(n.Value)
		if err != nil {
			return c.errf("audit.checkpoint", fix, "%v", err)
		}
		if d < MinAuditCheckpoint {
			return c.errf("audit.checkpoint", fix, "%v is below 1s", d)
		}
		a.Checkpoint = d
	}
	keyFix := "name the Ed25519 private key by signingKeyFile: PATH or by signingKeyEnv: VARIABLE, not both (see gatehouse audit keygen)"
	if n := a.keyFile; n != nil {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || n.Value == "" {
			return c.errf("audit.signingKeyFile", keyFix, "%s is not a file path", shown(n))
		}
		a.SigningKeyFile = n.Value
		if !filepath.IsAbs(a.SigningKeyFile) {
			a.SigningKeyFile = filepath.Join(c.Dir, a.SigningKeyFile)
		}
	}
	if n := a.keyEnv; n != nil {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || !envName(n.Value) {
			return c.errf("audit.signingKeyEnv", keyFix, "%s is not an environment variable's name", shown(n))
		}
		a.SigningKeyEnv = n.Value
	}
	if a.SigningKeyFile != "" && a.SigningKeyEnv != "" {
		return c.errf("audit", keyFix, "signingKeyFile and signingKeyEnv are both given")
	}
	return nil
}
