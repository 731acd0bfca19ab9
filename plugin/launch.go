package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// Vars are the values of the two placeholders of §9.2: Root for
// ${PLUGIN_ROOT} (the filesystem-resolved plugin root) and Data for
// ${PLUGIN_DATA} (the plugin data directory).
type Vars struct {
	Root string
	Data string
}

// Expand performs the placeholder expansion of §9.2 on s: every exact
// occurrence of ${PLUGIN_ROOT} is replaced by v.Root and of ${PLUGIN_DATA}
// by v.Data, in a single left-to-right pass. Text introduced by a
// replacement is never scanned again, and any other text (including
// $PLUGIN_ROOT, ${HOME} or ${plugin_root}) stays literal. Expand is pure.
func Expand(s string, v Vars) string {
	if !strings.Contains(s, "${PLUGIN_") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(v.Root) + len(v.Data))
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], placeholderRoot):
			b.WriteString(v.Root)
			i += len(placeholderRoot)
		case strings.HasPrefix(s[i:], placeholderData):
			b.WriteString(v.Data)
			i += len(placeholderData)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// Expanded returns a copy of a stdio config with placeholders expanded in
// every element of Args, every value of Env and in Cwd (§9.2). Command, Env
// keys, URL and Headers are never expanded. Nothing is resolved or checked:
// use LaunchSpec for that.
func (c ServerConfig) Expanded(v Vars) ServerConfig {
	out := c
	if c.Args != nil {
		out.Args = make([]string, len(c.Args))
		for i, a := range c.Args {
			out.Args[i] = Expand(a, v)
		}
	}
	if c.Env != nil {
		out.Env = make(map[string]string, len(c.Env))
		for k, val := range c.Env {
			out.Env[k] = Expand(val, v)
		}
	}
	if c.Cwd != "" {
		out.Cwd = Expand(c.Cwd, v)
	}
	if c.Headers != nil {
		out.Headers = make(map[string]string, len(c.Headers))
		for k, val := range c.Headers {
			out.Headers[k] = val
		}
	}
	return out
}

// Error is a failure that corresponds to a diagnostic rule, returned by
// LaunchSpec, EnsureDataDir and Skill.Body so that callers can report it
// as a diag.Diagnostic (see Diagnostic) or branch on Rule.
type Error struct {
	Rule    diag.Rule
	Section string
	// Origin is the server name, or the file for skills.
	Origin string
	Msg    string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	s := "plugin: " + e.Origin + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Diagnostic converts the error to a diagnostic.
func (e *Error) Diagnostic() diag.Diagnostic {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return diag.Diagnostic{Section: e.Section, Rule: e.Rule, Origin: e.Origin, Message: msg}
}

// LaunchSpec is everything needed to start a stdio server, resolved and
// checked immediately before the launch.
type LaunchSpec struct {
	// Path is the executable: an absolute, filesystem-resolved path inside
	// the plugin root for a "./" command, or the bare name as written (to
	// be found with exec.LookPath; configured PATH values do not take part).
	Path string
	// Bare reports whether Path is a bare name.
	Bare bool
	// Args are the expanded arguments (without argv[0]).
	Args []string
	// Env holds the configured env entries with values expanded, keys as
	// written. Environ applies them.
	Env map[string]string
	// Dir is the filesystem-resolved working directory: the plugin root by
	// default.
	Dir string
	// Root and Data are the filesystem-resolved PLUGIN_ROOT and PLUGIN_DATA.
	Root string
	Data string
}

// LaunchSpec expands a stdio config and resolves it for launch (§7.2.1,
// §9). Zero fields of v default to c.PluginRoot and c.PluginData. It
// re-resolves the plugin root, the data directory, a "./" command and the
// cwd through the filesystem at call time, so a symlink swapped in since
// Load cannot redirect the launch outside the plugin: an escape is an
// *Error with Rule path-escapes-plugin-root. A bad form is
// invalid-server-entry or reserved-env-name; a missing command, cwd or
// data directory is connection-failure (the server fails to start, §7.2.2).
// The data directory must exist: call EnsureDataDir first.
func (c ServerConfig) LaunchSpec(v Vars) (LaunchSpec, error) {
	fail := func(rule diag.Rule, section string, err error, format string, args ...any) (LaunchSpec, error) {
		return LaunchSpec{}, &Error{Rule: rule, Section: section, Origin: c.Name, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	if c.Type != TransportStdio {
		return fail(diag.InvalidServerEntry, "7.2.1", nil, "server type %q is not launched as a subprocess", c.Type)
	}
	if v.Root == "" {
		v.Root = c.PluginRoot
	}
	if v.Data == "" {
		v.Data = c.PluginData
	}
	var spec LaunchSpec
	if v.Root != "" {
		root, err := filepath.EvalSymlinks(v.Root)
		if err != nil {
			return fail(diag.ConnectionFailure, "7.2.2", err, "the plugin root cannot be resolved")
		}
		spec.Root = root
	}
	if v.Data != "" {
		data, err := filepath.EvalSymlinks(v.Data)
		if err != nil {
			return fail(diag.ConnectionFailure, "9.1", err, "the plugin data directory is not available (call EnsureDataDir before launching)")
		}
		spec.Data = data
	}
	vars := Vars{Root: spec.Root, Data: spec.Data}

	// command: never expanded.
	if rule, section, why := checkCommand(c.Command, spec.Root); why != "" {
		return fail(rule, section, nil, "%s", why)
	}
	if strings.HasPrefix(c.Command, "./") {
		p, err := filepath.EvalSymlinks(under(spec.Root, c.Command[2:]))
		if err != nil {
			return fail(diag.ConnectionFailure, "7.2.2", err, "command %q cannot be resolved", c.Command)
		}
		if !within(spec.Root, p) {
			return fail(diag.PathEscapesPluginRoot, "4.1", nil, "command %q resolves to %s, outside the plugin root", c.Command, p)
		}
		st, err := os.Stat(p)
		if err != nil {
			return fail(diag.ConnectionFailure, "7.2.2", err, "command %q cannot be examined", c.Command)
		}
		if !st.Mode().IsRegular() {
			return fail(diag.ConnectionFailure, "7.2.2", nil, "command %q is %s, not an executable file", c.Command, kindName(st.Mode()))
		}
		spec.Path = p
	} else {
		spec.Path = c.Command
		spec.Bare = true
	}

	for k := range c.Env {
		if isReservedEnv(k) {
			return fail(diag.ReservedEnvName, "9.2", nil, "\"env\" must not set %s", k)
		}
	}
	ex := c.Expanded(vars)
	spec.Args = ex.Args
	spec.Env = ex.Env

	// cwd: default the plugin root; else expand, resolve, contain.
	if c.Cwd == "" {
		if spec.Root == "" {
			return fail(diag.InvalidServerEntry, "7.2.1", nil, "there is no plugin root to use as the working directory")
		}
		spec.Dir = spec.Root
		return spec, nil
	}
	form := formOf(c.Cwd)
	if form == cwdInvalid {
		return fail(diag.InvalidServerEntry, "7.2.1", nil, "\"cwd\" %q has none of the forms ./..., ${PLUGIN_ROOT}[/...], ${PLUGIN_DATA}[/...]", c.Cwd)
	}
	if (form == cwdData && spec.Data == "") || (form != cwdData && spec.Root == "") {
		return fail(diag.InvalidServerEntry, "7.2.1", nil, "\"cwd\" %q needs a plugin root or data directory this server does not have", c.Cwd)
	}
	target, base := cwdTarget(c.Cwd, form, vars)
	dir, err := filepath.EvalSymlinks(target)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// A missing directory may hide an escape through a
			// dangling link: report the escape when it is one.
			if r, _, rerr := resolveAllowMissing(target); rerr == nil && !within(base, r) {
				return fail(diag.PathEscapesPluginRoot, "7.2.1", nil, "\"cwd\" %q resolves outside its base directory", c.Cwd)
			}
		}
		return fail(diag.ConnectionFailure, "7.2.2", err, "\"cwd\" %q cannot be resolved", c.Cwd)
	}
	if !within(base, dir) {
		return fail(diag.PathEscapesPluginRoot, "7.2.1", nil, "\"cwd\" %q resolves to %s, outside its base directory %s", c.Cwd, dir, base)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return fail(diag.ConnectionFailure, "7.2.2", err, "\"cwd\" %q is not a directory", c.Cwd)
	}
	spec.Dir = dir
	return spec, nil
}

// Environ builds the subprocess environment of §9.1 from base (typically a
// sanitized os.Environ()): the configured Env entries overlay base,
// replacing same-name entries, and then PLUGIN_ROOT and PLUGIN_DATA are set,
// replacing any equivalent entries. Names compare case-insensitively on
// Windows and exactly elsewhere. The order is deterministic: base entries
// keep their places (replaced in place), new names follow in sorted order.
func (l LaunchSpec) Environ(base []string) []string {
	fold := func(k string) string {
		if runtime.GOOS == "windows" {
			return strings.ToUpper(k)
		}
		return k
	}
	var out []string
	index := map[string]int{}
	set := func(k, v string) {
		if i, ok := index[fold(k)]; ok {
			out[i] = k + "=" + v
			return
		}
		index[fold(k)] = len(out)
		out = append(out, k+"="+v)
	}
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" { // Windows "=C:=..." entries: keep verbatim
			out = append(out, kv)
			continue
		}
		set(k, v)
	}
	for _, k := range sortedKeys(l.Env) {
		set(k, l.Env[k])
	}
	set("PLUGIN_ROOT", l.Root)
	set("PLUGIN_DATA", l.Data)
	return out
}

// DataDir returns the PLUGIN_DATA location of §9.1 for the plugin whose
// filesystem-resolved root is root and whose manifest name is name: the
// directory data/<name> next to the plugin directory (for
// /home/alex/.agents/plugins/devtools it is
// /home/alex/.agents/plugins/data/devtools). It depends only on the parent
// directory and the name, so it survives a plugin update that replaces the
// plugin directory. It does not touch the filesystem.
func DataDir(root, name string) string {
	return filepath.Join(filepath.Dir(root), "data", name)
}

// EnsureDataDir creates the plugin data directory DataDir(root, name) (mode
// 0700, parents included), proves it writable by creating and removing a
// file in it, and returns its filesystem-resolved path. Call it before
// launching a plugin subprocess (§9.1). Its contents are never removed.
func EnsureDataDir(root, name string) (string, error) {
	if why := pluginNameProblem(name); why != "" {
		return "", &Error{Rule: diag.InvalidName, Section: "5.5", Origin: name, Msg: "cannot make a data directory for an invalid plugin name: " + why}
	}
	if root == "" {
		return "", &Error{Rule: diag.ConnectionFailure, Section: "9.1", Origin: name, Msg: "no plugin root"}
	}
	dir := DataDir(root, name)
	fail := func(msg string, err error) (string, error) {
		return "", &Error{Rule: diag.ConnectionFailure, Section: "9.1", Origin: name, Msg: msg, Err: err}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail("cannot create the plugin data directory "+dir, err)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fail("cannot resolve the plugin data directory "+dir, err)
	}
	st, err := os.Stat(resolved)
	if err != nil || !st.IsDir() {
		return fail("the plugin data directory "+dir+" is not a directory", err)
	}
	f, err := os.CreateTemp(resolved, ".gatehouse-write-check-*")
	if err != nil {
		return fail("the plugin data directory "+dir+" is not writable", err)
	}
	name2 := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name2)
	if cerr != nil || rerr != nil {
		return fail("the plugin data directory "+dir+" is not writable", errors.Join(cerr, rerr))
	}
	return resolved, nil
}
