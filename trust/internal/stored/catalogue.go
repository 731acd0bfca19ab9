package stored

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
)

// CatalogueFormat names the JSON layout of a stored catalogue.
const CatalogueFormat = "gatehouse/catalogue/v1"

type catalogue struct {
	Format string      `json:"format"`
	Tools  []*mcp.Tool `json:"tools"`
	// Prints caches each tool's pin (pin.Pin.String, by name), so a wake
	// need not re-fingerprint. It is a cache like the rest: an entry that
	// does not parse, or a tool without one, is fingerprinted again, and
	// the reconcile judges the live listing from scratch.
	Prints map[string]string `json:"prints,omitempty"`
}

// EncodeCatalogue returns the stored form of a listing: the tools exactly
// as listed (as the go-sdk client decoded them), and their fingerprints.
func EncodeCatalogue(tools []*mcp.Tool, prints []pin.ToolPrint) ([]byte, error) {
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	c := catalogue{Format: CatalogueFormat, Tools: tools}
	if len(prints) > 0 {
		c.Prints = make(map[string]string, len(prints))
		for _, p := range prints {
			c.Prints[p.Name] = pin.Pin{Fingerprint: p.Fingerprint, Unnamed: p.Unnamed}.String()
		}
	}
	return json.Marshal(c)
}

// ErrCatalogue is wrapped by the errors of DecodeCatalogue and
// DecodeCatalogueCached.
var ErrCatalogue = errors.New("stored catalogue does not parse")

// DecodeCatalogue reads a stored catalogue: the versioned object, or a bare
// JSON array of tools (rows written before the format was versioned). Every
// tool must have a non-empty name.
func DecodeCatalogue(b []byte) ([]*mcp.Tool, error) {
	tools, _, err := DecodeCatalogueCached(b)
	return tools, err
}

// DecodeCatalogueCached is DecodeCatalogue that also returns the cached
// pins (pin.Pin.String by tool name; nil when absent). See
// CachedToolPrints.
func DecodeCatalogueCached(b []byte) ([]*mcp.Tool, map[string]string, error) {
	t := bytes.TrimSpace(b)
	var tools []*mcp.Tool
	var cached map[string]string
	switch {
	case len(t) > 0 && t[0] == '[':
		if err := json.Unmarshal(t, &tools); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrCatalogue, err)
		}
	case len(t) > 0 && t[0] == '{':
		var c catalogue
		if err := json.Unmarshal(t, &c); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrCatalogue, err)
		}
		if c.Format != CatalogueFormat {
			return nil, nil, fmt.Errorf("%w: unknown format %q", ErrCatalogue, pin.SanitizeName(c.Format))
		}
		tools, cached = c.Tools, c.Prints
	default:
		return nil, nil, fmt.Errorf("%w: not a JSON object or array", ErrCatalogue)
	}
	for i, tool := range tools {
		if tool == nil || tool.Name == "" {
			return nil, nil, fmt.Errorf("%w: tool %d has no name", ErrCatalogue, i)
		}
	}
	return tools, cached, nil
}
