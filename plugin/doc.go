// Package plugin loads Agent Plugins 1.0.0 packages: plugin.json, skills/
// and mcp.json (spec: shared/specs/agent-plugins-1.0.0/spec.md).
//
//	res := plugin.Load("plugins/acme")
//	for _, d := range res.Diagnostics {
//		log.Print(d) // what was skipped or ignored, or why the plugin was rejected
//	}
//	if res.OK() {
//		for _, s := range res.Plugin.Servers {
//			fmt.Println(s.Name, s.Type) // validated, not connected
//		}
//	}
//
// Load(dir) returns a Result: either a rejected plugin (Plugin is nil and the
// diagnostics say why) or a loaded plugin with its manifest, its valid skills
// and its valid MCP server configurations, plus a diagnostic for everything
// that was skipped or ignored. Diagnostics use the rule names of
// docs/reference/diagnostics.md (package diag). Nothing is connected or executed.
//
// # Guarantees
//
//   - Load never panics and never returns an error for bad plugin content;
//     every problem is a diagnostic with a rule, a spec section, an origin
//     (plugin.json, mcp.json, skills/<dir>/SKILL.md, skills, or a server
//     name) and a message that says what to fix.
//   - Load only reads the plugin tree. It writes nothing, fetches no schema
//     and opens no network connection. Files are opened non-blocking and
//     checked to be regular files on the open handle, so a FIFO or device
//     planted in a plugin cannot hang it; plugin.json and mcp.json are read
//     up to 4 MiB and SKILL.md up to 8 MiB.
//   - Containment (§4.1): the plugin root is resolved with
//     filepath.EvalSymlinks, and every path the loader reads is resolved and
//     must stay inside it. Symlinks inside the root are followed; paths that
//     resolve outside are refused at the narrowest boundary: plugin.json →
//     plugin rejected; skills or mcp.json → that component type disabled;
//     a skill directory or SKILL.md → that skill skipped; a "./" command or
//     a cwd → that server skipped. All are path-escapes-plugin-root.
//   - Failures are graded (§11.3): a bad manifest rejects the plugin and no
//     component is discovered; a bad skills/ or mcp.json disables only that
//     component type; a bad skill or server entry is skipped alone.
//   - Skills and servers are sorted by name. Diagnostics come in a fixed
//     order: plugin.json, skills (by directory name), mcp.json, servers (by
//     name).
//   - Placeholders are never expanded at load time. Expand is the pure
//     single-pass expansion of §9.2; ServerConfig.LaunchSpec expands and
//     re-checks a stdio entry through the filesystem immediately before a
//     launch; EnsureDataDir creates PLUGIN_DATA.
//
// # Choices where the spec is silent or leaves room
//
// JSON. A file must be exactly one JSON value in UTF-8 (RFC 8259): invalid
// UTF-8, a byte order mark and trailing data after the value make it invalid
// JSON (manifest-invalid, mcp-invalid-json). A member name that occurs twice
// in an object the loader interprets makes that object ambiguous and so
// invalid: in plugin.json or author → manifest-invalid; at the top of
// mcp.json → mcp-invalid; a server name twice in mcpServers → that server is
// skipped (invalid-server-entry) and its siblings load; a field twice in an
// entry or env → invalid-server-entry; a header twice → invalid-header. The
// contents of extension namespaces are not examined at all.
//
// $schema. Identifiers are compared exactly and mapped locally to a version
// (only 1.0.0 is recognized). In plugin.json a missing or non-string $schema
// is manifest-invalid and an unrecognized string is
// unsupported-schema-version; in mcp.json the same cases are mcp-invalid and
// unsupported-schema-version, and a recognized identifier of another version
// than plugin.json's is schema-version-mismatch. When $schema does not
// select rules nothing else in that file is judged.
//
// Manifest. With a recognized $schema every violation is reported, not just
// the first; unknown top-level fields are reported (one unknown-field each)
// even when the plugin is rejected for another reason. An empty name is
// manifest-invalid (§5.3, "empty"); any other §5.5 violation is
// invalid-name. A non-object extensions is extensions-not-an-object and
// Manifest.Extensions is nil. No namespace is implemented, and §8.1 has a
// client ignore the entries of namespaces it does not implement without
// validating their values, so a namespace's value is kept raw whatever its
// JSON type ({"com.other.client": 5} loads, with no diagnostic) and
// namespace names are not checked; a namespace written twice is a
// duplicate member (manifest-invalid). Extension directories (§8.2) and
// other component directories (commands/, hooks/, ...) are ignored.
//
// plugin.json and the root. A missing plugin directory, a path that is not a
// directory, and a plugin.json that is absent, a dangling symlink, a symlink
// loop, a directory or any non-regular file are manifest-missing.
//
// Skills. Children of skills/ are visited in byte order and never recursed
// into. A child with nothing named SKILL.md is silently not a skill; a
// SKILL.md that exists but is not a regular file (a directory, a dangling
// link, a FIFO) is reported as invalid-skill so the author learns of it. The
// skill directory and SKILL.md must both resolve inside the root. The front
// matter starts with a first line exactly "---" and ends at the next line
// exactly "---" (a trailing CR is accepted). Following the Agent Skills
// specification, the fields are name, description, license, compatibility,
// metadata and allowed-tools, and any other field makes the skill invalid
// (the strict reading, as the reference validator does). Values must be
// YAML strings: an unquoted number or boolean, null, an alias or a
// collection is rejected (quote it); duplicate keys are rejected. name is
// 1–64 of a-z, 0-9 and "-", with no leading, trailing or double hyphen, and
// equals the directory entry's name under skills/; description is 1–1024
// characters (runes) and not blank; compatibility, when present, is 1–500
// characters and not blank; metadata is a map of strings to strings.
// Skill.Body reads the markdown after the front matter on demand and
// re-checks containment first.
//
// mcp.json entries. Diagnostics about one entry have the server name as
// origin and the message starts with server "<name>". Server names are not
// constrained. Missing or empty command/url, a missing or unknown type, an
// unknown field, a field of another variant and a wrong JSON type are
// invalid-server-entry.
//
//   - command is one token: no whitespace anywhere and no NUL. A bare name
//     has no "/" or "\"; otherwise it must start with "./" followed by a
//     non-empty path with forward slashes. "../x", "/usr/bin/x" and
//     "${PLUGIN_ROOT}/x" are invalid (command is never expanded). A "./"
//     command is resolved at load time (existing components, dangling links
//     included) and must stay in the root; an executable that does not exist
//     yet is not a configuration error, it fails at launch.
//   - cwd must be "./...", ${PLUGIN_ROOT}[/...] or ${PLUGIN_DATA}[/...]
//     ("", "." and "/abs" are invalid). After expansion it must stay inside
//     the root or the data directory; the load-time check resolves what
//     exists and treats the rest lexically. Escaping the data directory is
//     also reported as path-escapes-plugin-root.
//   - env must not name PLUGIN_ROOT or PLUGIN_DATA (reserved-env-name;
//     exact on Unix, case-insensitive on Windows, per platform name
//     semantics). A name that is empty or contains "=" or NUL, and a value
//     with NUL, cannot exist in a process environment: invalid-server-entry.
//   - url: no whitespace or control characters, no "#" at all, no user
//     information (not even a user name), scheme http or https, a host; http
//     only when the host is "localhost" (ASCII case-insensitive) or a
//     loopback IP literal (127.0.0.0/8, ::1). 0.0.0.0 is not loopback. A
//     missing or empty url is invalid-server-entry, a bad one invalid-url.
//   - headers: names are RFC 9110 tokens; values may hold visible ASCII,
//     spaces, tabs and obs-text, may be empty, and must not hold CR, LF, NUL
//     or other control characters nor begin or end with whitespace (HTTP
//     would strip it); names that differ only in case are invalid-header.
//   - secret-in-config is a warning; the entry loads. It is raised for env
//     values and header values that begin with a known credential prefix
//     (sk-, ghp_, gho_, github_pat_, xoxb-, xoxp-, AKIA, glpat-, Bearer ,
//     Basic , ...), for the Authorization, Proxy-Authorization and Cookie
//     headers, for env names and header names containing TOKEN, SECRET, KEY,
//     PASSWORD, PASSWD or CREDENTIAL with a non-empty literal value (a value
//     starting with ${PLUGIN_ROOT} or ${PLUGIN_DATA} is a path, not a
//     secret), for such arguments, and for such URL query parameters.
//     Messages name the field, never the value; user information in a URL
//     is redacted.
//   - The loader accepts all three transports; whether this client runs one
//     (unsupported-transport) is decided by the launcher.
//
// ParseServer validates one entry outside a plugin. Its Vars.Root is the
// directory "./" paths resolve against and the value of ${PLUGIN_ROOT}
// (the gateway passes its config file's directory, or "" to forbid
// plugin-relative forms); with Vars.Data empty a ${PLUGIN_DATA} cwd is
// checked lexically at parse time and for real at launch.
//
// Launch. LaunchSpec re-resolves the root, the data directory, a "./"
// command and the cwd at call time and returns *Error: path-escapes-plugin-root
// for an escape, invalid-server-entry or reserved-env-name for a bad form,
// connection-failure for something missing (the server fails to start). The
// cwd defaults to the plugin root. LaunchSpec.Environ overlays the
// configured env on a base environment and then sets PLUGIN_ROOT and
// PLUGIN_DATA (§9.1).
//
// PLUGIN_DATA. DataDir(root, name) is data/<name> next to the plugin
// directory, computed from the filesystem-resolved root, so it survives an
// update that replaces the plugin directory. Consequently no plugin should
// itself be a directory named "data" beside the others. EnsureDataDir
// creates it with mode 0700 and proves it writable.
package plugin
