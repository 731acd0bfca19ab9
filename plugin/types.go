package plugin

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// Canonical schema identifiers of Agent Plugins 1.0.0 (§5.2, §7.2.1). They
// are recognized locally and never fetched.
const (
	manifestSchemaV1 = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
	mcpSchemaV1      = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
)

// Result is the outcome of Load. Exactly one of two things is true: the
// plugin was rejected (Plugin is nil and Diagnostics says why), or it loaded
// (Plugin is set; Diagnostics lists whatever was skipped or ignored).
type Result struct {
	Plugin      *Plugin
	Diagnostics []diag.Diagnostic
}

// OK reports whether the plugin loaded.
func (r Result) OK() bool { return r.Plugin != nil }

// Plugin is a loaded plugin: its manifest and the components that passed
// validation. Nothing in it has been connected or executed.
type Plugin struct {
	// Root is the absolute, filesystem-resolved plugin root (symlinks
	// evaluated). PLUGIN_ROOT is set to this value.
	Root     string
	Manifest Manifest
	// Skills are sorted by name.
	Skills []Skill
	// Servers are the valid MCP server entries of mcp.json, sorted by name.
	Servers []ServerConfig
}

// Author is the manifest's author object (§5.4).
type Author struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Manifest is a validated plugin.json (§5).
type Manifest struct {
	Schema      string   `json:"$schema"`
	Name        string   `json:"name"`
	Version     string   `json:"version,omitempty"`
	Description string   `json:"description,omitempty"`
	Author      *Author  `json:"author,omitempty"`
	Homepage    string   `json:"homepage,omitempty"`
	Repository  string   `json:"repository,omitempty"`
	License     string   `json:"license,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	// Extensions holds the raw value of each namespace, never validated
	// (§8.1). Nil when absent or when extensions was not an object.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

// Transport is a server entry's declared transport (§7.2.1).
type Transport string

// The transports of Agent Plugins 1.0.0.
const (
	TransportStdio          Transport = "stdio"
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
)

// ServerConfig is one validated MCP server entry. For stdio entries Command,
// Args, Env and Cwd are as written in mcp.json: placeholders are expanded at
// launch time (see Expand), never at load time. For remote entries URL and
// Headers are as written and never expanded.
type ServerConfig struct {
	// Name is the member name in mcpServers (or in the gateway's servers:).
	Name string
	Type Transport

	// stdio
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string

	// streamable-http and sse
	URL     string
	Headers map[string]string

	// PluginName and PluginRoot say which plugin declared the entry; both are
	// empty for servers configured in code or inline in a gateway config.
	// PluginRoot is the filesystem-resolved root.
	PluginName string
	PluginRoot string
	// PluginData is the plugin data directory chosen at load time
	// (DataDir(PluginRoot, PluginName)); empty when there is no plugin. It
	// may not exist yet: EnsureDataDir creates it.
	PluginData string
}

// Skill is a discovered, valid Agent Skill (§7.1). The body of SKILL.md is
// not kept in memory; Body reads it on demand.
type Skill struct {
	// Name equals the skill's directory name.
	Name          string
	Description   string
	License       string
	Compatibility string
	Metadata      map[string]string
	AllowedTools  string
	// Dir is the skill directory and Path its SKILL.md, both absolute and
	// inside the plugin root.
	Dir  string
	Path string
	// PluginRoot is the filesystem-resolved root of the plugin that holds
	// the skill; Body re-checks containment against it.
	PluginRoot string
}
