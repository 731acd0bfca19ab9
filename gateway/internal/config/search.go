package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits of search.limit.
const (
	// DefaultSearchLimit is search.limit's default.
	DefaultSearchLimit = 8
	// MaxSearchLimit is the largest search.limit, and the most tools one
	// call of gatehouse__search_tools may ask for.
	MaxSearchLimit = 50
)

// Search configures tool search: the gateway's meta-tool
// gatehouse__search_tools and the stable tools/list. Its YAML form is
// search: {enabled: true, limit: 8, model: ./models/potion-base-8M}.
type Search struct {
	// Enabled, when true, gives every caller the stable tools/list:
	// gatehouse__search_tools and the disclosure.alwaysLoad tools it may
	// see, the same list whatever tools come and go behind it; every tool
	// the caller may see stays callable by name. Absent (nil), the stable
	// list is given to a caller whose visible catalog is over
	// disclosure.budget, and the full list to the others. False turns
	// search off: gatehouse__search_tools is neither listed nor served.
	Enabled *bool `yaml:"enabled" json:"enabled"`
	// Limit is how many tools a search answers when the call gives no
	// limit: 1 to 50, default 8.
	Limit int `yaml:"limit" json:"limit"`
	// Model is a directory holding a static embedding model in the
	// model2vec format (model.safetensors and tokenizer.json, e.g.
	// minishlab/potion-base-8M), relative to the config file: the search
	// re-ranks its best candidates by meaning with it (docs/search.md).
	// Empty: words only. Nothing is downloaded; the gateway reads the
	// directory when it starts and refuses to start if it cannot.
	Model string `yaml:"model" json:"model"`

	// enabled, limit and model are the values as written (nil when
	// absent); validate reads them.
	enabled, limit, model *yaml.Node
	// shape is a mistake in search's own shape, reported by validate.
	shape *Error
}

// Off reports whether search is turned off (search.enabled: false).
func (s Search) Off() bool { return s.Enabled != nil && !*s.Enabled }

// Always reports whether every caller gets the stable tools/list
// (search.enabled: true).
func (s Search) Always() bool { return s.Enabled != nil && *s.Enabled }

// searchFix is the fix of a mistake in search's shape.
const searchFix = "write search: {enabled: true, limit: 8, model: DIR} (all optional)"

// UnmarshalYAML reads search's mapping, keeping its values as written for
// validate (see Drift.UnmarshalYAML).
func (s *Search) UnmarshalYAML(n *yaml.Node) error {
	*s = Search{}
	if n.Kind != yaml.MappingNode {
		s.shape = &Error{Field: "search", Msg: "must be a mapping", Fix: searchFix}
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var dst **yaml.Node
		switch {
		case k.Kind == yaml.ScalarNode && k.Value == "enabled":
			dst = &s.enabled
		case k.Kind == yaml.ScalarNode && k.Value == "limit":
			dst = &s.limit
		case k.Kind == yaml.ScalarNode && k.Value == "model":
			dst = &s.model
		default:
			s.shape = &Error{Field: "search", Msg: fmt.Sprintf("unknown field %q", k.Value),
				Fix: "search has three fields, enabled, limit and model: " + searchFix}
			return nil
		}
		if *dst != nil {
			s.shape = &Error{Field: "search." + k.Value, Msg: "given twice", Fix: searchFix}
			return nil
		}
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		*dst = v
	}
	return nil
}

// checkSearch resolves search: enabled a boolean when given, limit a whole
// number from 1 to MaxSearchLimit (DefaultSearchLimit when absent).
func (c *Config) checkSearch() error {
	s := &c.Search
	if s.shape != nil {
		return c.errf(s.shape.Field, s.shape.Fix, "%s", s.shape.Msg)
	}
	if n := s.enabled; n != nil {
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			return c.errf("search.enabled", "use true (always the stable list), false (search off), or leave it out (the stable list for callers over disclosure.budget)",
				"%s is not true or false", shown(n))
		}
		s.Enabled = &b
	}
	s.Limit = DefaultSearchLimit
	if n := s.limit; n != nil {
		fix := fmt.Sprintf("use a whole number of tools from 1 to %d (default %d)", MaxSearchLimit, DefaultSearchLimit)
		var l int
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&l) != nil {
			return c.errf("search.limit", fix, "%s is not a whole number", shown(n))
		}
		if l < 1 || l > MaxSearchLimit {
			return c.errf("search.limit", fix, "%d is out of range", l)
		}
		s.Limit = l
	}
	if n := s.model; n != nil {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || strings.TrimSpace(n.Value) == "" {
			return c.errf("search.model", "use the path of a directory with model.safetensors and tokenizer.json (a model2vec model), or leave it out",
				"%s is not a directory's path", shown(n))
		}
		s.Model = n.Value
	}
	return nil
}

// SearchModelDir returns search.model resolved against Dir, or "" when
// no model is configured.
func (c *Config) SearchModelDir() string {
	switch m := c.Search.Model; {
	case m == "":
		return ""
	case filepath.IsAbs(m):
		return m
	default:
		return filepath.Join(c.Dir, m)
	}
}

// shown is a YAML value as a message quotes it.
func shown(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind != yaml.ScalarNode || n.Tag == "!!null":
		return "no value"
	}
	return fmt.Sprintf("%q", n.Value)
}
