package config

import (
	"bytes"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// DefaultShutdownDrain is shutdownDrain's default.
const DefaultShutdownDrain = 10 * time.Second

// MaxInstanceLen is the longest instance name: a Kubernetes pod name (a DNS
// subdomain) fits.
const MaxInstanceLen = 253

// instancePattern is what an instance name may hold: letters, digits, '.',
// '-' and '_', beginning with a letter or a digit. The executor's ID is
// instance#incarnation, so '#' (and '/', blanks) never appear in one.
var instancePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// instanceFix is the fix of every instance mistake.
const instanceFix = "use letters, digits, '.', '-' and '_' (at most 253, beginning with a letter or a digit), " +
	"such as the pod name; leave it out to derive one"

// CheckInstance reports whether name is a valid instance name (see
// Config.Instance): nil, or the reason it is not.
func CheckInstance(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("is empty")
	case len(name) > MaxInstanceLen:
		return fmt.Errorf("is %d characters long, more than %d", len(name), MaxInstanceLen)
	case !instancePattern.MatchString(name):
		return fmt.Errorf("%q holds a character other than letters, digits, '.', '-' and '_', or does not begin with a letter or a digit", name)
	}
	return nil
}

// SetInstance sets Instance from outside the file, the environment
// variable from (GATEHOUSE_INSTANCE): an invalid name is a *Error naming
// from, and c is left as it was.
func (c *Config) SetInstance(name, from string) error {
	if err := CheckInstance(name); err != nil {
		return &Error{File: from, Field: "instance", Msg: err.Error(), Fix: instanceFix}
	}
	c.Instance = name
	return nil
}

// checkLifecycle validates instance and shutdownDrain.
func (c *Config) checkLifecycle() error {
	if c.Instance != "" {
		if err := CheckInstance(c.Instance); err != nil {
			return c.errf("instance", instanceFix, "%v", err)
		}
	}
	if c.ShutdownDrain < 0 {
		return c.errf("shutdownDrain", "use a duration such as 10s (the default), or 0 to stop without a drain", "must not be negative")
	}
	return nil
}

// bareZero returns data with a bare 0 as shutdownDrain's value written 0s:
// the decoder takes no number for a duration, and 0 is how one says "no
// drain". Nothing else changes, line numbers included.
func bareZero(data []byte, doc *yaml.Node) []byte {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return data
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value != "shutdownDrain" || v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Value != "0" || v.Style != 0 {
			continue
		}
		// The value's offset from its line and column (1-based; the
		// column counts runes).
		off, line := 0, 1
		for line < v.Line && off < len(data) {
			j := bytes.IndexByte(data[off:], '\n')
			if j < 0 {
				return data
			}
			off += j + 1
			line++
		}
		for col := 1; col < v.Column && off < len(data); col++ {
			_, size := utf8.DecodeRune(data[off:])
			off += size
		}
		if off >= len(data) || data[off] != '0' {
			return data
		}
		out := make([]byte, 0, len(data)+1)
		out = append(out, data[:off+1]...)
		out = append(out, 's')
		return append(out, data[off+1:]...)
	}
	return data
}

// hasKey reports whether the document's top mapping has key with a value
// other than null (null, like absent, means the default).
func hasKey(doc *yaml.Node, key string) bool {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Tag != "!!null"
		}
	}
	return false
}
