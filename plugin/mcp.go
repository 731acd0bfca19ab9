package plugin

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
)

const mcpOrigin = "mcp.json"

// Placeholders of §9.2.
const (
	placeholderRoot = "${PLUGIN_ROOT}"
	placeholderData = "${PLUGIN_DATA}"
)

// variantFields lists the fields of each closed server variant (§7.2.1).
var variantFields = map[Transport][]string{
	TransportStdio:          {"type", "command", "args", "env", "cwd"},
	TransportStreamableHTTP: {"type", "url", "headers"},
	TransportSSE:            {"type", "url", "headers"},
}

// parseMCP validates mcp.json bytes. enabled is false when MCP is disabled
// for the plugin (a top-level problem); servers holds the valid entries
// sorted by name. manifestVersion is the version plugin.json selected.
func parseMCP(data []byte, manifestVersion string, vs versions, v Vars) (servers []ServerConfig, ds []diag.Diagnostic, enabled bool) {
	top := func(rule diag.Rule, section, format string, args ...any) {
		ds = append(ds, diag.New(rule, section, mcpOrigin, format, args...))
	}
	if err := checkDocument(data); err != nil {
		top(diag.MCPInvalidJSON, "7.2.2", "mcp.json is not valid JSON: %v; MCP is disabled for this plugin", err)
		return nil, ds, false
	}
	ms, err := members(data)
	if err != nil {
		top(diag.MCPInvalid, "7.2.1", "mcp.json must contain a JSON object at the top level, but it %v; MCP is disabled for this plugin", err)
		return nil, ds, false
	}
	byName := map[string]json.RawMessage{}
	for _, mb := range ms {
		byName[mb.Name] = mb.Value
	}
	rawSchema, present := byName["$schema"]
	schema, isStr := asString(rawSchema)
	switch {
	case !present:
		top(diag.MCPInvalid, "7.2.1", "mcp.json is missing the required \"$schema\" field; set it to %q. MCP is disabled for this plugin", mcpSchemaV1)
		return nil, ds, false
	case !isStr:
		top(diag.MCPInvalid, "7.2.1", "\"$schema\" in mcp.json must be a string, not %s; set it to %q. MCP is disabled for this plugin", kindOf(rawSchema), mcpSchemaV1)
		return nil, ds, false
	}
	version, known := vs.mcp[schema]
	if !known {
		top(diag.UnsupportedSchemaVersion, "7.2.2", "mcp.json \"$schema\" is %q, which is not an Agent Plugins version this client supports (it supports %q); MCP is disabled for this plugin", schema, mcpSchemaV1)
		return nil, ds, false
	}
	if version != manifestVersion {
		top(diag.SchemaVersionMismatch, "10.1", "mcp.json targets Agent Plugins %s but plugin.json targets %s; they must match. MCP is disabled for this plugin", version, manifestVersion)
		return nil, ds, false
	}
	for _, d := range duplicates(ms) {
		top(diag.MCPInvalid, "7.2.1", "mcp.json has the top-level field %q more than once; keep exactly one. MCP is disabled for this plugin", d)
	}
	for _, mb := range ms {
		if mb.Name != "$schema" && mb.Name != "mcpServers" {
			top(diag.MCPInvalid, "7.2.1", "unknown top-level field %q in mcp.json; only \"$schema\" and \"mcpServers\" are allowed. MCP is disabled for this plugin", mb.Name)
		}
	}
	rawServers, present := byName["mcpServers"]
	var entries []member
	if !present {
		top(diag.MCPInvalid, "7.2.1", "mcp.json is missing the required \"mcpServers\" object; MCP is disabled for this plugin")
	} else if entries, err = members(rawServers); err != nil {
		top(diag.MCPInvalid, "7.2.1", "\"mcpServers\" %v; MCP is disabled for this plugin", err)
	}
	if len(ds) > 0 {
		return nil, ds, false
	}

	dup := map[string]bool{}
	for _, d := range duplicates(entries) {
		dup[d] = true
		ds = append(ds, diag.New(diag.InvalidServerEntry, "7.2.1", d,
			"server %q is defined more than once in mcp.json; its configuration is ambiguous, so it is skipped. Keep exactly one definition", d))
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	for _, e := range entries {
		if dup[e.Name] {
			continue
		}
		sc, sds, ok := ParseServer(e.Name, e.Value, v)
		ds = append(ds, sds...)
		if ok {
			servers = append(servers, sc)
		}
	}
	return servers, ds, true
}

// ParseServer validates one MCP server entry (the value of one member of
// mcpServers) by the rules of §7.2.1 and §9.2, on its own, so a caller can
// keep the failure boundary of §7.2.2 (the gateway uses it for servers
// configured inline).
//
// v.Root is the directory "./" paths resolve against and the value of
// ${PLUGIN_ROOT}; it should be filesystem-resolved. When v.Root is empty
// there is no plugin root: a "./" command and a "./" or ${PLUGIN_ROOT} cwd
// are invalid. v.Data is the plugin data directory; when it is empty a
// ${PLUGIN_DATA} cwd is only checked lexically (it must not climb out of
// the data directory) and is checked again at launch.
//
// ok is false when the entry must be skipped; the diagnostics (origin: the
// server name) say why. Diagnostics may be non-empty when ok is true: a
// secret-in-config warning does not skip the entry. The returned config
// holds the values as written (placeholders unexpanded) and PluginRoot =
// v.Root, PluginData = v.Data.
func ParseServer(name string, raw json.RawMessage, v Vars) (ServerConfig, []diag.Diagnostic, bool) {
	p := serverParser{name: name, vars: v}
	sc, ok := p.parse(raw)
	return sc, p.ds, ok
}

type serverParser struct {
	name string
	vars Vars
	ds   []diag.Diagnostic
}

func (p *serverParser) fail(rule diag.Rule, section, format string, args ...any) {
	prefix := fmt.Sprintf("server %q: ", p.name)
	p.ds = append(p.ds, diag.New(rule, section, p.name, prefix+format, args...))
}

func (p *serverParser) parse(raw json.RawMessage) (ServerConfig, bool) {
	if err := checkDocument(raw); err != nil {
		p.fail(diag.InvalidServerEntry, "7.2.1", "the entry is not valid JSON: %v", err)
		return ServerConfig{}, false
	}
	ms, err := members(raw)
	if err != nil {
		p.fail(diag.InvalidServerEntry, "7.2.1", "the entry %v; it must be a server configuration object", err)
		return ServerConfig{}, false
	}
	if dups := duplicates(ms); len(dups) > 0 {
		p.fail(diag.InvalidServerEntry, "7.2.1", "the field %q appears more than once; keep exactly one", dups[0])
		return ServerConfig{}, false
	}
	fields := map[string]json.RawMessage{}
	for _, mb := range ms {
		fields[mb.Name] = mb.Value
	}
	rawType, present := fields["type"]
	if !present {
		p.fail(diag.InvalidServerEntry, "7.2.1", "the required field \"type\" is missing; use \"stdio\", \"streamable-http\" or \"sse\"")
		return ServerConfig{}, false
	}
	typ, isStr := asString(rawType)
	if !isStr {
		p.fail(diag.InvalidServerEntry, "7.2.1", "\"type\" must be a string, not %s", kindOf(rawType))
		return ServerConfig{}, false
	}
	t := Transport(typ)
	allowed, known := variantFields[t]
	if !known {
		p.fail(diag.InvalidServerEntry, "7.2.1", "unknown type %q; use \"stdio\", \"streamable-http\" or \"sse\"", typ)
		return ServerConfig{}, false
	}
	ok := true
	for _, mb := range ms {
		if contains(allowed, mb.Name) {
			continue
		}
		ok = false
		if owner := variantOf(mb.Name); owner != "" {
			p.fail(diag.InvalidServerEntry, "7.2.1", "field %q belongs to %s servers, not to type %q; remove it", mb.Name, owner, typ)
		} else {
			p.fail(diag.InvalidServerEntry, "7.2.1", "unknown field %q for type %q; allowed fields are %s", mb.Name, typ, strings.Join(allowed, ", "))
		}
	}
	sc := ServerConfig{Name: p.name, Type: t, PluginRoot: p.vars.Root, PluginData: p.vars.Data}
	if t == TransportStdio {
		ok = p.stdio(fields, &sc) && ok
	} else {
		ok = p.remote(fields, &sc) && ok
	}
	if !ok {
		return ServerConfig{}, false
	}
	p.secrets(sc)
	return sc, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func variantOf(field string) string {
	switch field {
	case "command", "args", "env", "cwd":
		return "stdio"
	case "url", "headers":
		return "streamable-http and sse"
	}
	return ""
}

// requiredString reads a required, non-empty string field of an entry,
// reporting invalid-server-entry when it is missing, not a string or empty.
func (p *serverParser) requiredString(fields map[string]json.RawMessage, name string) (string, bool) {
	raw, present := fields[name]
	v, isStr := asString(raw)
	switch {
	case !present:
		p.fail(diag.InvalidServerEntry, "7.2.1", "the required field %q is missing", name)
	case !isStr:
		p.fail(diag.InvalidServerEntry, "7.2.1", "%q must be a string, not %s", name, kindOf(raw))
	case v == "":
		p.fail(diag.InvalidServerEntry, "7.2.1", "%q must not be empty", name)
	default:
		return v, true
	}
	return "", false
}

func (p *serverParser) stdio(fields map[string]json.RawMessage, sc *ServerConfig) bool {
	cmd, ok := p.requiredString(fields, "command")
	if ok {
		if rule, section, why := checkCommand(cmd, p.vars.Root); why != "" {
			p.fail(rule, section, "%s", why)
			ok = false
		}
		sc.Command = cmd
	}
	if raw, present := fields["args"]; present {
		args, err := asStringArray(raw)
		if err != nil {
			p.fail(diag.InvalidServerEntry, "7.2.1", "\"args\" %v", err)
			ok = false
		}
		sc.Args = args
	}
	if raw, present := fields["env"]; present {
		env, good := p.stringMap("env", raw, diag.InvalidServerEntry)
		ok = ok && good
		for _, k := range sortedKeys(env) {
			switch {
			case isReservedEnv(k):
				p.fail(diag.ReservedEnvName, "9.2", "\"env\" must not set %s; the client supplies PLUGIN_ROOT and PLUGIN_DATA itself", k)
				ok = false
			case k == "" || strings.ContainsAny(k, "=\x00"):
				p.fail(diag.InvalidServerEntry, "7.2.1", "\"env\" name %q cannot be a process environment name (it is empty or contains '=' or NUL)", k)
				ok = false
			case strings.ContainsRune(env[k], 0):
				p.fail(diag.InvalidServerEntry, "7.2.1", "\"env\" value of %s contains a NUL byte, which no process environment can hold", k)
				ok = false
			}
		}
		sc.Env = env
	}
	if raw, present := fields["cwd"]; present {
		cwd, isStr := asString(raw)
		if !isStr {
			p.fail(diag.InvalidServerEntry, "7.2.1", "\"cwd\" must be a string, not %s", kindOf(raw))
			return false
		}
		if rule, section, why := checkCwd(cwd, p.vars); why != "" {
			p.fail(rule, section, "%s", why)
			ok = false
		}
		sc.Cwd = cwd
	}
	return ok
}

// stringMap decodes an object of strings, reporting duplicate names.
func (p *serverParser) stringMap(field string, raw json.RawMessage, rule diag.Rule) (map[string]string, bool) {
	ms, err := members(raw)
	if err != nil {
		p.fail(diag.InvalidServerEntry, "7.2.1", "%q %v; it must be an object of strings", field, err)
		return nil, false
	}
	out := make(map[string]string, len(ms))
	ok := true
	for _, mb := range ms {
		s, isStr := asString(mb.Value)
		if !isStr {
			p.fail(diag.InvalidServerEntry, "7.2.1", "%q value of %q must be a string, not %s", field, mb.Name, kindOf(mb.Value))
			ok = false
			continue
		}
		if _, dup := out[mb.Name]; dup {
			p.fail(rule, "7.2.1", "%q has %q more than once; keep exactly one", field, mb.Name)
			ok = false
			continue
		}
		out[mb.Name] = s
	}
	return out, ok
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isReservedEnv reports whether k names PLUGIN_ROOT or PLUGIN_DATA under
// the platform's environment-name semantics (case-insensitive on Windows).
func isReservedEnv(k string) bool {
	if runtime.GOOS == "windows" {
		k = strings.ToUpper(k)
	}
	return k == "PLUGIN_ROOT" || k == "PLUGIN_DATA"
}

// checkCommand validates a stdio command (§7.2.1): one token, a bare name or
// a "./" plugin-relative path whose resolved location stays in the root.
// A missing executable is not a configuration error (it fails at launch).
func checkCommand(cmd, root string) (diag.Rule, string, string) {
	if strings.TrimSpace(cmd) != cmd || strings.ContainsAny(cmd, " \t\r\n\v\f\x00") {
		return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"command\" %q must be a single executable token with no whitespace, not a shell command string; put arguments in \"args\"", cmd)
	}
	if !strings.HasPrefix(cmd, "./") {
		if strings.ContainsAny(cmd, `/\`) {
			return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"command\" %q must be a bare executable name or a plugin-relative path beginning with \"./\" (placeholders are not expanded in command)", cmd)
		}
		return "", "", ""
	}
	rel := cmd[2:]
	if rel == "" || strings.Contains(rel, `\`) {
		return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"command\" %q must name a file below the plugin root, with forward slashes", cmd)
	}
	if root == "" {
		return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"command\" %q is plugin-relative but this server has no plugin root", cmd)
	}
	resolved, _, err := resolveAllowMissing(under(root, rel))
	if err != nil {
		return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"command\" %s", describeResolveError(cmd, err))
	}
	if !within(root, resolved) {
		return diag.PathEscapesPluginRoot, "4.1", fmt.Sprintf("\"command\" %q resolves to %s, outside the plugin root", cmd, resolved)
	}
	return "", "", ""
}

// cwdForm classifies a cwd value by the three forms of §7.2.1.
type cwdForm int

const (
	cwdInvalid cwdForm = iota
	cwdRelative
	cwdRoot
	cwdData
)

func formOf(cwd string) cwdForm {
	switch {
	case strings.HasPrefix(cwd, "./"):
		return cwdRelative
	case cwd == placeholderRoot || strings.HasPrefix(cwd, placeholderRoot+"/"):
		return cwdRoot
	case cwd == placeholderData || strings.HasPrefix(cwd, placeholderData+"/"):
		return cwdData
	}
	return cwdInvalid
}

// syntheticData stands in for an unknown plugin data directory in lexical
// checks: any absolute path with no symlinks gives the same answer.
const syntheticData = "/nonexistent-plugin-data"

// checkCwd validates a cwd value at load time: its form, and that after
// expansion it stays inside the plugin root or data directory (resolving
// what exists; a missing directory is a launch-time failure).
func checkCwd(cwd string, v Vars) (diag.Rule, string, string) {
	form := formOf(cwd)
	if form == cwdInvalid || strings.ContainsRune(cwd, 0) {
		return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"cwd\" %q must begin with \"./\", or be ${PLUGIN_ROOT} or ${PLUGIN_DATA} optionally followed by \"/...\"", cwd)
	}
	if form != cwdData && v.Root == "" {
		return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"cwd\" %q is relative to the plugin root but this server has no plugin root", cwd)
	}
	lexicalData := v.Data == ""
	if lexicalData {
		v.Data = syntheticData
	}
	target, base := cwdTarget(cwd, form, v)
	var resolved string
	if lexicalData && form == cwdData {
		resolved = filepath.Clean(target)
	} else {
		r, _, err := resolveAllowMissing(target)
		if err != nil {
			return diag.InvalidServerEntry, "7.2.1", fmt.Sprintf("\"cwd\" %s", describeResolveError(cwd, err))
		}
		resolved = r
		if form == cwdData {
			if rb, _, err := resolveAllowMissing(base); err == nil {
				base = rb
			}
		}
	}
	if !within(base, resolved) {
		where := "the plugin root"
		if form == cwdData {
			where = "the plugin data directory"
		}
		return diag.PathEscapesPluginRoot, "7.2.1", fmt.Sprintf("\"cwd\" %q resolves outside %s", cwd, where)
	}
	return "", "", ""
}

// cwdTarget expands cwd and returns the unresolved path it names and the
// directory it must stay in.
func cwdTarget(cwd string, form cwdForm, v Vars) (target, base string) {
	exp := Expand(cwd, v)
	switch form {
	case cwdRelative:
		return under(v.Root, exp[2:]), v.Root
	case cwdRoot:
		return exp, v.Root
	default:
		return exp, v.Data
	}
}

func (p *serverParser) remote(fields map[string]json.RawMessage, sc *ServerConfig) bool {
	u, ok := p.requiredString(fields, "url")
	if ok {
		if why := urlProblem(u); why != "" {
			shown := u
			if pu, err := url.Parse(u); err == nil && pu.User != nil {
				shown = pu.Redacted()
			}
			p.fail(diag.InvalidURL, "7.2.1", "\"url\" %q %s", shown, why)
			ok = false
		}
		sc.URL = u
	}
	if raw, present := fields["headers"]; present {
		h, good := p.stringMap("headers", raw, diag.InvalidHeader)
		ok = ok && good
		seen := map[string]string{}
		for _, k := range sortedKeys(h) {
			if why := headerNameProblem(k); why != "" {
				p.fail(diag.InvalidHeader, "7.2.1", "header name %q %s", k, why)
				ok = false
			}
			if why := headerValueProblem(h[k]); why != "" {
				p.fail(diag.InvalidHeader, "7.2.1", "the value of header %q %s", k, why)
				ok = false
			}
			lk := strings.ToLower(k)
			if prev, dup := seen[lk]; dup {
				p.fail(diag.InvalidHeader, "7.2.1", "headers %q and %q are the same header (names are case-insensitive); keep one", prev, k)
				ok = false
			}
			seen[lk] = k
		}
		sc.Headers = h
	}
	return ok
}

// urlProblem returns why u is not an acceptable remote MCP URL (§7.2.1).
func urlProblem(u string) string {
	for _, r := range u {
		if r <= ' ' || r == 0x7f {
			return "must not contain spaces or control characters"
		}
	}
	if strings.Contains(u, "#") {
		return "must not contain a fragment (#...)"
	}
	pu, err := url.Parse(u)
	if err != nil {
		return fmt.Sprintf("is not a valid URL: %v", err)
	}
	if pu.Scheme != "http" && pu.Scheme != "https" {
		return "must be an absolute http:// or https:// URL"
	}
	if pu.Opaque != "" || pu.Host == "" {
		return "must be an absolute URL with a host, like https://host/path"
	}
	if pu.User != nil || strings.Contains(pu.Host, "@") {
		return "must not contain user information (user:password@); credentials do not belong in plugin files"
	}
	host := pu.Hostname()
	if host == "" {
		return "must name a host"
	}
	if port := pu.Port(); port == "" && strings.HasSuffix(pu.Host, ":") {
		return "has an empty port"
	}
	if pu.Scheme == "http" && !isLoopbackHost(host) {
		return "must use https: plain http is allowed only for localhost and loopback IP addresses"
	}
	return ""
}

// isLoopbackHost reports whether host is exactly "localhost" (ASCII
// case-insensitive) or an IP literal in a loopback range.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// headerNameProblem checks an RFC 9110 field name (a token).
func headerNameProblem(k string) string {
	if k == "" {
		return "is empty"
	}
	for i := 0; i < len(k); i++ {
		if !isTokenChar(k[i]) {
			return fmt.Sprintf("contains %q, which is not allowed in an HTTP header name", k[i])
		}
	}
	return ""
}

func isTokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// headerValueProblem checks an RFC 9110 field value: visible characters,
// spaces and tabs inside, obs-text allowed; no CR, LF, NUL or other control
// characters, and no leading or trailing whitespace (which HTTP would strip).
func headerValueProblem(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\t' {
			continue
		}
		if c < ' ' || c == 0x7f {
			return "contains a control character (CR, LF, NUL, ...), which HTTP does not allow"
		}
	}
	if strings.TrimLeft(v, " \t") != v || strings.TrimRight(v, " \t") != v {
		return "has leading or trailing whitespace, which HTTP would strip"
	}
	return ""
}
