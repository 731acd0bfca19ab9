package plugin

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// maxJSONFile bounds plugin.json and mcp.json.
const maxJSONFile = 4 << 20

// Load loads the Agent Plugins 1.0.0 plugin in directory dir: it validates
// plugin.json, discovers skills/ and mcp.json, and returns the plugin with
// every valid component, or a rejection. It reads only the plugin tree,
// connects and executes nothing, fetches no schema, never panics, and
// reports every problem with the plugin's content as a diagnostic rather
// than an error. See the package documentation for the guarantees.
func Load(dir string) Result {
	return load(dir, defaultVersions())
}

func load(dir string, vs versions) Result {
	var res Result
	reject := func(rule diag.Rule, section, origin, format string, args ...any) Result {
		res.Diagnostics = append(res.Diagnostics, diag.New(rule, section, origin, format, args...))
		res.Plugin = nil
		return res
	}

	// The filesystem-resolved plugin root (§4.1).
	abs, err := filepath.Abs(dir)
	if err != nil {
		return reject(diag.ManifestMissing, "5.1", manifestOrigin, "the plugin directory %q cannot be made absolute: %v", dir, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return reject(diag.ManifestMissing, "5.1", manifestOrigin, "the plugin directory %s does not exist", abs)
		}
		return reject(diag.ManifestMissing, "5.1", manifestOrigin, "the plugin directory %s", describeResolveError(abs, err))
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return reject(diag.ManifestMissing, "5.1", manifestOrigin, "the plugin path %s is not a directory; a plugin is a directory with plugin.json at its root", abs)
	}

	// plugin.json (§5.1, §4.1 boundary 1).
	manifestPath := under(root, "plugin.json")
	if _, err := os.Lstat(manifestPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return reject(diag.ManifestMissing, "5.1", manifestOrigin, "no plugin.json at the plugin root %s; every plugin needs one", root)
		}
		return reject(diag.ManifestMissing, "5.1", manifestOrigin, "plugin.json cannot be examined: %v", err)
	}
	resolved, err := filepath.EvalSymlinks(manifestPath)
	if err != nil {
		return reject(diag.ManifestMissing, "5.1", manifestOrigin, "%s", describeResolveError("plugin.json", err))
	}
	if !within(root, resolved) {
		return reject(diag.PathEscapesPluginRoot, "4.1", manifestOrigin, "plugin.json resolves to %s, outside the plugin root %s; the plugin is rejected", resolved, root)
	}
	data, err := readRegular(resolved, maxJSONFile)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return reject(diag.ManifestInvalid, "5.2", manifestOrigin, "plugin.json is larger than %d bytes", maxJSONFile)
		}
		return reject(diag.ManifestMissing, "5.1", manifestOrigin, "plugin.json must be a regular file, but %s", readProblem(resolved, err, maxJSONFile))
	}
	m, version, ds, ok := parseManifest(data, vs)
	res.Diagnostics = append(res.Diagnostics, ds...)
	if !ok {
		return res
	}
	p := &Plugin{Root: root, Manifest: m}

	// Skills (§6, §7.1).
	skills, sds := discoverSkills(root)
	p.Skills = skills
	res.Diagnostics = append(res.Diagnostics, sds...)

	// MCP servers (§6, §7.2).
	servers, mds := loadMCP(root, version, vs, Vars{Root: root, Data: DataDir(root, m.Name)})
	for i := range servers {
		servers[i].PluginName = m.Name
	}
	p.Servers = servers
	res.Diagnostics = append(res.Diagnostics, mds...)

	res.Plugin = p
	return res
}

// loadMCP finds and parses mcp.json at the fixed location.
func loadMCP(root, manifestVersion string, vs versions, v Vars) ([]ServerConfig, []diag.Diagnostic) {
	loc := under(root, "mcp.json")
	if _, err := os.Lstat(loc); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // §6.2
	}
	bad := func(rule diag.Rule, section, format string, args ...any) ([]ServerConfig, []diag.Diagnostic) {
		return nil, []diag.Diagnostic{diag.New(rule, section, mcpOrigin, format, args...)}
	}
	resolved, err := filepath.EvalSymlinks(loc)
	if err != nil {
		return bad(diag.ComponentWrongKind, "6.2", "mcp.json is present but does not resolve to a regular file: %s; MCP is disabled for this plugin", describeResolveError("mcp.json", err))
	}
	if !within(root, resolved) {
		return bad(diag.PathEscapesPluginRoot, "4.1", "mcp.json resolves to %s, outside the plugin root; MCP is disabled for this plugin", resolved)
	}
	data, err := readRegular(resolved, maxJSONFile)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return bad(diag.MCPInvalid, "7.2.1", "mcp.json is larger than %d bytes; MCP is disabled for this plugin", maxJSONFile)
		}
		return bad(diag.ComponentWrongKind, "6.2", "mcp.json must be a regular file, but %s; MCP is disabled for this plugin", readProblem(resolved, err, maxJSONFile))
	}
	servers, ds, _ := parseMCP(data, manifestVersion, vs, v)
	return servers, ds
}
