package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// launch is a stdio server's command line, environment and working directory
// after placeholder expansion and realpath checks.
type launch struct {
	path string // resolved executable
	args []string
	env  []string
	dir  string
}

// StdioIdentity returns the identity used for collision suffixes: the
// resolved command and the expanded args, NUL-joined. It creates nothing and
// starts nothing (a PATH lookup at most).
func StdioIdentity(cfg plugin.ServerConfig) string {
	path := cfg.Command
	if cfg.PluginRoot != "" && strings.HasPrefix(path, "./") {
		path = filepath.Join(cfg.PluginRoot, path[2:])
	}
	if p, err := resolveExecutable(path); err == nil {
		path = p
	}
	vars := plugin.Vars{Root: cfg.PluginRoot, Data: dataDir(cfg)}
	parts := []string{path}
	for _, a := range cfg.Args {
		parts = append(parts, plugin.Expand(a, vars))
	}
	return strings.Join(parts, "\x00")
}

func dataDir(cfg plugin.ServerConfig) string {
	if cfg.PluginData != "" || cfg.PluginRoot == "" {
		return cfg.PluginData
	}
	return plugin.DataDir(cfg.PluginRoot, cfg.PluginName)
}

// resolveExecutable resolves a command through PATH (for a bare name) and
// realpath.
func resolveExecutable(cmd string) (string, error) {
	p := cmd
	if !strings.ContainsRune(cmd, filepath.Separator) {
		var err error
		if p, err = exec.LookPath(cmd); err != nil {
			return "", fmt.Errorf("command %q: %w", cmd, err)
		}
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("resolving command %q: %w", cmd, err)
	}
	return r, nil
}

// ensureData creates the plugin data directory and proves it writable.
func ensureData(cfg plugin.ServerConfig) (string, error) {
	if cfg.PluginData == "" || cfg.PluginData == plugin.DataDir(cfg.PluginRoot, cfg.PluginName) {
		return plugin.EnsureDataDir(cfg.PluginRoot, cfg.PluginName)
	}
	if err := os.MkdirAll(cfg.PluginData, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(cfg.PluginData, ".gatehouse-write-check-*")
	if err != nil {
		return "", fmt.Errorf("the plugin data directory %s is not writable: %w", cfg.PluginData, err)
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(cfg.PluginData)
}

// StdioOptions say where a stdio server's stderr goes.
type StdioOptions struct {
	// Stderr receives the child's stderr as it writes it.
	Stderr io.Writer
	// StderrLog, when Stderr is nil, receives the child's stderr line by
	// line as data: one record per line (message StderrMessage, the line
	// in the attribute "line", at most StderrLineMax bytes), at a bounded
	// rate. Both nil: discarded.
	StderrLog *slog.Logger
}

// Stdio returns the transport of a stdio server, checked right before the
// spawn (see prepareLaunch): env is the base environment (nil: this
// process's), grace how long Close waits at each step before signalling
// harder.
func Stdio(cfg plugin.ServerConfig, env []string, grace time.Duration, opts StdioOptions) (mcp.Transport, error) {
	l, err := prepareLaunch(cfg, env)
	if err != nil {
		return nil, err
	}
	return &stdioTransport{l: l, argv0: cfg.Command, grace: grace, stderr: opts.Stderr, stderrLog: opts.StderrLog}, nil
}

// prepareLaunch runs right before each spawn. For a plugin's server it
// creates PLUGIN_DATA and lets plugin.LaunchSpec expand placeholders and
// re-check command and cwd through realpath (they must stay inside the
// plugin root, or PLUGIN_DATA for a ${PLUGIN_DATA} cwd). The environment is
// base (default: this process's), overlaid with the configured env, then
// PLUGIN_ROOT and PLUGIN_DATA. A server configured in code (no plugin root)
// is launched as configured, from cwd or this process's directory.
func prepareLaunch(cfg plugin.ServerConfig, base []string) (*launch, error) {
	if base == nil {
		base = os.Environ()
	}
	if cfg.PluginRoot == "" {
		l := &launch{args: cfg.Args}
		e := newEnv(base)
		for k, v := range cfg.Env {
			e.set(k, v)
		}
		l.env = e.list()
		if cfg.Cwd != "" {
			d, err := filepath.EvalSymlinks(cfg.Cwd)
			if err != nil {
				return nil, fmt.Errorf("resolving cwd: %w", err)
			}
			l.dir = d
		}
		p, err := resolveExecutable(cfg.Command)
		if err != nil {
			return nil, err
		}
		l.path = p
		return l, nil
	}
	// A server of a gateway config (a root, no plugin) has no plugin data
	// directory: PLUGIN_DATA is empty for it.
	var data string
	if cfg.PluginName != "" || cfg.PluginData != "" {
		var err error
		if data, err = ensureData(cfg); err != nil {
			return nil, err
		}
	}
	spec, err := cfg.LaunchSpec(plugin.Vars{Root: cfg.PluginRoot, Data: data})
	if err != nil {
		return nil, err
	}
	path := spec.Path
	if spec.Bare {
		if path, err = resolveExecutable(spec.Path); err != nil {
			return nil, err
		}
	}
	return &launch{path: path, args: spec.Args, env: spec.Environ(base), dir: spec.Dir}, nil
}

// env is an ordered environment with replace-by-name semantics (exact names,
// as on Unix).
type env struct {
	keys []string
	vals map[string]string
}

func newEnv(base []string) *env {
	e := &env{vals: make(map[string]string, len(base))}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		e.set(k, v)
	}
	return e
}

func (e *env) set(k, v string) {
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

func (e *env) list() []string {
	out := make([]string, 0, len(e.keys))
	for _, k := range e.keys {
		out = append(out, k+"="+e.vals[k])
	}
	return out
}

// stdioTransport launches one child in its own process group and speaks MCP
// over its stdin/stdout (mcp.IOTransport). Unlike mcp.CommandTransport, its
// Close signals the whole group, so grandchildren (e.g. "go run", "npx") are
// reaped too.
type stdioTransport struct {
	l         *launch
	argv0     string
	grace     time.Duration
	stderr    io.Writer
	stderrLog *slog.Logger
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	return t.connect(ctx, nil)
}

// connect starts the child; tap, when set, receives each notification the
// connection reads, in wire order (Tapped).
func (t *stdioTransport) connect(ctx context.Context, tap func(method string, params json.RawMessage)) (mcp.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	stderr := t.stderr
	var lines *stderrLog
	if stderr == nil && t.stderrLog != nil {
		lines = newStderrLog(t.stderrLog, time.Now)
		stderr = lines
	}
	cmd := &exec.Cmd{
		Path:        t.l.path,
		Args:        append([]string{t.argv0}, t.l.args...),
		Env:         t.l.env,
		Dir:         t.l.dir,
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		WaitDelay:   t.grace,
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, pgid: cmd.Process.Pid, grace: t.grace, out: outR, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait() // returns once the stderr copy is done
		if lines != nil {
			lines.Flush()
		}
		close(p.done)
	}()
	// A line (one message) past MaxAnswer ends the connection: the
	// go-sdk's reader stops at its bound rather than buffer without end.
	// The pipes are read and written with raw system calls (package
	// rawio): the same calls, without waking the runtime's monitor thread
	// on each message of a gateway that goes idle between calls.
	var rd io.Reader = outR
	var wr io.WriteCloser = inW
	if f, err := rawio.NewFile(outR); err == nil {
		rd = f
	}
	if f, err := rawio.NewFile(inW); err == nil {
		wr = f
	}
	// The go-sdk's reads and writes go through a Pipe, which carries
	// requests written as bytes beside them (see Pipe).
	wmu := new(sync.Mutex)
	pipe := newPipe(wr, wmu)
	inner, err := (&mcp.IOTransport{
		Reader:        io.NopCloser(newPipeReader(rd, pipe, MaxAnswer, tap)),
		Writer:        &lockedWriter{mu: wmu, w: wr},
		MaxLineLength: MaxAnswer,
	}).Connect(ctx)
	if err != nil {
		inW.Close()
		p.reap()
		return nil, err
	}
	return &procConn{Connection: inner, p: p, pipe: pipe, tap: tap}, nil
}

// process is a running child and its group.
type process struct {
	cmd   *exec.Cmd
	pgid  int
	grace time.Duration
	out   *os.File
	done  chan struct{}
	err   error
	once  sync.Once
}

// reap waits for the child to exit after its stdin was closed: up to grace,
// then SIGTERM to the group, up to grace, then SIGKILL to the group. Once the
// leader is gone, stragglers left in the group are killed too.
func (p *process) reap() {
	p.once.Do(func() {
		wait := func(d time.Duration) bool {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-p.done:
				return true
			case <-t.C:
				return false
			}
		}
		if !wait(p.grace) {
			_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
			if !wait(p.grace) {
				_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
				<-p.done
			}
		}
		// The leader is gone; its group id cannot be reused while members
		// remain, so this only reaches stragglers of this group.
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		p.out.Close()
	})
}

// procConn closes the MCP connection (which closes the child's stdin) and
// then reaps the child.
type procConn struct {
	mcp.Connection
	p    *process
	pipe *Pipe
	tap  func(method string, params json.RawMessage)
	seen int64 // messages read (by the go-sdk's one reading goroutine)
}

// Read passes on what the go-sdk's reader decoded, less the answers to the
// pipe's requests the pipe's reader left to it (see Pipe). Up to the pipe's
// break its reader tapped the notifications; from there on Read does.
func (c *procConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		c.seen++
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if c.pipe.takeDecoded(m) {
				continue
			}
		case *jsonrpc.Request:
			if c.tap != nil && !m.IsCall() && c.seen > c.pipe.breakAt.Load() {
				c.tap(m.Method, m.Params)
			}
		}
		return msg, nil
	}
}

func (c *procConn) Close() error {
	c.pipe.end(errPipeClosed)
	err := c.Connection.Close()
	c.p.reap()
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}
