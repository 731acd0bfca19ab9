// Package diag defines the diagnostics Gatehouse reports about plugins,
// server configurations and connections, and the fixed rule names of
// docs/reference/diagnostics.md.
//
//	res := plugin.Load("plugins/acme")
//	for _, d := range res.Diagnostics {
//		fmt.Println(d) // weather: server "weather": "url" ... must use https ... [invalid-url, §7.2.1]
//	}
//	if diag.Has(res.Diagnostics, diag.SecretInConfig) {
//		// warn the operator; the server loaded anyway
//	}
//
// A Diagnostic is data, not an error: loading a plugin or opening a toolset
// returns diagnostics alongside whatever did load, so one bad entry never
// hides its siblings. Rule names are a public contract; scripts match on them.
package diag

import (
	"fmt"
	"strings"
)

// Rule names a class of diagnostic. The set is fixed by docs/reference/diagnostics.md.
type Rule string

// The rules of docs/reference/diagnostics.md. The comment on each says what happens to the
// thing it is about.
const (
	ManifestMissing          Rule = "manifest-missing"           // plugin rejected
	ManifestInvalid          Rule = "manifest-invalid"           // plugin rejected
	UnsupportedSchemaVersion Rule = "unsupported-schema-version" // plugin rejected (manifest) / MCP disabled (mcp.json)
	InvalidName              Rule = "invalid-name"               // plugin rejected
	UnknownField             Rule = "unknown-field"              // reported, ignored
	ExtensionsNotAnObject    Rule = "extensions-not-an-object"   // reported, ignored
	PathEscapesPluginRoot    Rule = "path-escapes-plugin-root"   // plugin rejected / component, skill or server skipped
	ComponentWrongKind       Rule = "component-wrong-kind"       // that component type invalid
	InvalidSkill             Rule = "invalid-skill"              // that skill skipped
	MCPInvalidJSON           Rule = "mcp-invalid-json"           // MCP disabled for the plugin
	MCPInvalid               Rule = "mcp-invalid"                // MCP disabled for the plugin
	SchemaVersionMismatch    Rule = "schema-version-mismatch"    // MCP disabled for the plugin
	InvalidServerEntry       Rule = "invalid-server-entry"       // that server skipped
	InvalidURL               Rule = "invalid-url"                // that server skipped
	InvalidHeader            Rule = "invalid-header"             // that server skipped
	ReservedEnvName          Rule = "reserved-env-name"          // that server skipped
	UnsupportedTransport     Rule = "unsupported-transport"      // that server skipped
	SecretInConfig           Rule = "secret-in-config"           // warning only
	ConnectionFailure        Rule = "connection-failure"         // that server skipped at connect time
	HostNotAllowed           Rule = "host-not-allowed"           // that server skipped
	UnsafeAddress            Rule = "unsafe-address"             // a dial refused
	ServerNameCollision      Rule = "server-name-collision"      // both servers suffixed
	DisclosureBudgetExceeded Rule = "disclosure-budget-exceeded" // a catalog alone is over budget
	ToolDrift                Rule = "tool-drift"                 // quarantined, withheld or logged
)

// Rules lists every rule of docs/reference/diagnostics.md in table order.
func Rules() []Rule {
	return []Rule{
		ManifestMissing, ManifestInvalid, UnsupportedSchemaVersion, InvalidName,
		UnknownField, ExtensionsNotAnObject, PathEscapesPluginRoot, ComponentWrongKind,
		InvalidSkill, MCPInvalidJSON, MCPInvalid, SchemaVersionMismatch,
		InvalidServerEntry, InvalidURL, InvalidHeader, ReservedEnvName,
		UnsupportedTransport, SecretInConfig, ConnectionFailure, HostNotAllowed,
		UnsafeAddress, ServerNameCollision, DisclosureBudgetExceeded, ToolDrift,
	}
}

// Known reports whether r is one of the rules of docs/reference/diagnostics.md.
func (r Rule) Known() bool {
	for _, k := range Rules() {
		if k == r {
			return true
		}
	}
	return false
}

// Diagnostic is one finding. Its JSON form is fixed by docs/reference/diagnostics.md.
type Diagnostic struct {
	// Section names the Agent Plugins 1.0.0 clause ("5.2", "7.2.1", ...),
	// or is empty for runtime rules.
	Section string `json:"section"`
	// Rule is the rule name.
	Rule Rule `json:"rule"`
	// Origin is the file (plugin.json, mcp.json, skills/<dir>/SKILL.md) or
	// the server name the finding is about.
	Origin string `json:"origin"`
	// Message is a sentence a person can act on.
	Message string `json:"message"`
}

// New returns a Diagnostic whose message is formatted with fmt.Sprintf.
func New(rule Rule, section, origin, format string, args ...any) Diagnostic {
	return Diagnostic{Section: section, Rule: rule, Origin: origin, Message: fmt.Sprintf(format, args...)}
}

// String renders the diagnostic on one line for people:
// "origin: message [rule, §section]".
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.Origin != "" {
		b.WriteString(d.Origin)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	b.WriteString(" [")
	b.WriteString(string(d.Rule))
	if d.Section != "" {
		b.WriteString(", §")
		b.WriteString(d.Section)
	}
	b.WriteString("]")
	return b.String()
}

// Has reports whether any diagnostic in ds has the given rule.
func Has(ds []Diagnostic, rule Rule) bool {
	for _, d := range ds {
		if d.Rule == rule {
			return true
		}
	}
	return false
}
