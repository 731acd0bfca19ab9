package config

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// DefaultDriftRecheck is drift.recheck's default.
const DefaultDriftRecheck = 60 * time.Second

// MinDriftRecheck is the shortest drift.recheck other than 0. Below it every
// connected server would be re-listed more than once a second: a storm of
// tools/list requests on the upstreams and of writes on the store, for
// nothing a model could notice.
const MinDriftRecheck = time.Second

// Drift tunes how drift is caught while the gateway runs. Its YAML form is
// drift: {recheck: 60s}.
type Drift struct {
	// Recheck is how often every connected server is re-listed in the
	// background and judged against its trusted baseline, like any listing:
	// a Go duration such as 60s or 2m, at least 1s. 0 turns the re-listing
	// off (drift is then judged only when a server is listed anyway: at
	// start, on a reconnect, on list_changed). Default 60s.
	Recheck time.Duration `yaml:"recheck" json:"recheck"`

	// recheck is drift.recheck as written (nil when absent); validate
	// turns it into Recheck.
	recheck *yaml.Node
	// shape is a mistake in drift's own shape (not a mapping, a key other
	// than recheck, a repeated key), reported by validate with the field.
	shape *Error
}

// RecheckOff reports whether background re-listing is off (drift.recheck:
// 0).
func (d Drift) RecheckOff() bool { return d.Recheck <= 0 }

// driftFix is the fix of every drift.recheck mistake.
const driftFix = "use a duration of at least 1s such as 60s or 2m (default 60s), or 0 to turn the background re-listing off"

// UnmarshalYAML reads drift's mapping. It keeps recheck as written for
// validate, which reports a mistake as a *Error naming the field; the
// decoder's strictness about unknown fields does not reach a custom
// unmarshaller, so this one refuses them itself.
func (d *Drift) UnmarshalYAML(n *yaml.Node) error {
	*d = Drift{}
	if n.Kind != yaml.MappingNode {
		d.shape = &Error{Field: "drift", Msg: "must be a mapping",
			Fix: "write drift: {recheck: 60s}"}
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value != "recheck" {
			d.shape = &Error{Field: "drift", Msg: fmt.Sprintf("unknown field %q", k.Value),
				Fix: "drift has one field, recheck: drift: {recheck: 60s}"}
			return nil
		}
		if d.recheck != nil {
			d.shape = &Error{Field: "drift.recheck", Msg: "given twice",
				Fix: "write recheck once: drift: {recheck: 60s}"}
			return nil
		}
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		d.recheck = v
	}
	return nil
}

// checkDrift resolves drift.recheck: the default when absent, else the
// duration written, which must be 0 or at least MinDriftRecheck.
func (c *Config) checkDrift() error {
	d := &c.Drift
	if d.shape != nil {
		return c.errf(d.shape.Field, d.shape.Fix, "%s", d.shape.Msg)
	}
	if d.recheck == nil {
		d.Recheck = DefaultDriftRecheck
		return nil
	}
	v, err := parseRecheck(d.recheck)
	if err != "" {
		return c.errf("drift.recheck", driftFix, "%s", err)
	}
	d.Recheck = v
	return nil
}

// parseRecheck reads drift.recheck's value; a mistake is the reason, else
// "".
func parseRecheck(n *yaml.Node) (time.Duration, string) {
	switch {
	case n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode:
		return 0, "must be a duration such as 60s, not a list or a mapping"
	case n.Kind != yaml.ScalarNode:
		return 0, "must be a duration such as 60s"
	case n.Tag == "!!null":
		return 0, "has no value"
	}
	s := n.Value
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, fmt.Sprintf("%q has no unit (seconds? minutes?)", s)
		}
		return 0, fmt.Sprintf("%q is not a duration", s)
	}
	switch {
	case d < 0:
		return 0, fmt.Sprintf("%v must not be negative", d)
	case d > 0 && d < MinDriftRecheck:
		return 0, fmt.Sprintf("%v is below %v: every connected server would be re-listed more than once a second, a storm of tools/list on the upstreams and of writes on the store", d, MinDriftRecheck)
	}
	return d, ""
}
