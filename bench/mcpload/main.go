package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	URL         string
	Headers     http.Header
	Command     []string
	Shared      bool
	AllowRemote bool
	NoSSE       bool
	Protocol    string

	Tool         string
	Args         json.RawMessage // the arguments object sent on every call
	Field        string
	PayloadBytes int
	Verify       bool
	Expect       string // with Verify: the text the tool must answer with

	// Keys is -keys: the _meta.idempotencyKey each call carries. With a
	// pool, PoolArgs[i] and PoolExpects[i] are key i's arguments and answer.
	Keys        keySpec
	PoolArgs    []json.RawMessage
	PoolExpects []string

	Sessions        int
	Duration        time.Duration
	Warmup          time.Duration
	Calls           int64
	Timeout         time.Duration
	OpenConcurrency int

	RSSPID int
	Idle   int
	Hold   time.Duration

	Label   string
	JSON    bool
	Report  []string // -report files: render results instead of running
	Medians bool     // with -report: one table of medians over rounds
}

// usageError is a bad command line; run exits 2 for it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpload:", err)
		return 2
	}
	if len(cfg.Report) > 0 {
		if err := renderReport(stdout, cfg.Report, cfg.Medians); err != nil {
			fmt.Fprintln(stderr, "mcpload:", err)
			return 1
		}
		return 0
	}
	var res *result
	if cfg.Idle > 0 {
		res, err = runIdle(ctx, cfg, stderr)
	} else {
		res, err = runLoad(ctx, cfg, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpload:", err)
		return 1
	}
	if cfg.JSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(stderr, "mcpload:", err)
			return 1
		}
	} else {
		writeHuman(stdout, res)
	}
	if res.Errors > 0 || res.OpenErrors > 0 {
		return 3
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{Headers: http.Header{}}
	fs := flag.NewFlagSet("mcpload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: mcpload (-url URL | -cmd 'PROGRAM ARGS...') [flags]
       mcpload -report FILE...

Drives N MCP client sessions in closed loops (call, wait for the answer, call
again) and reports calls/s and latency percentiles. See the package doc.

`)
		fs.PrintDefaults()
	}
	var headers headerList
	var cmdLine, argsJSON, keys, tokenFile string
	fs.StringVar(&cfg.URL, "url", "", "streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp")
	fs.Var(&headers, "header", "extra HTTP header `Name: value` on every request (repeatable)")
	fs.StringVar(&tokenFile, "token-file", "", "send the bearer token in this file (one line) as Authorization: Bearer,\nso that it is not on the command line")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow a -url that is not a loopback address")
	fs.BoolVar(&cfg.NoSSE, "no-sse", false, "do not open the standalone SSE stream (GET) per session")
	fs.StringVar(&cmdLine, "cmd", "", "stdio server command line (quotes allowed, no expansion)")
	fs.BoolVar(&cfg.Shared, "shared", false, "open one session and run -sessions concurrent loops on it\n(default: one session, and with -cmd one process, per loop)")
	fs.StringVar(&cfg.Protocol, "protocol", "", "protocol version to request (default: the go-sdk's latest, which\nfalls back to 2025-11-25 on servers without server/discover)")
	fs.StringVar(&cfg.Tool, "tool", "echo", "tool to call")
	fs.StringVar(&argsJSON, "args", "", "tool arguments, a JSON object")
	fs.IntVar(&cfg.PayloadBytes, "payload", 0, "add a generated ASCII string of this many bytes as argument -field")
	fs.StringVar(&cfg.Field, "field", "message", "argument that -payload fills and -verify checks")
	fs.StringVar(&keys, "keys", "", "send _meta.idempotencyKey on every call: `unique` (a fresh key a call) or\npool:N (N keys per loop in turn, so that repeats are replays at a journaling\ngateway; with -payload each key's payload begins with its number)")
	fs.BoolVar(&cfg.Verify, "verify", false, "count a call as an error unless its first text content equals the\nstring argument -field (what an echo tool answers)")
	fs.IntVar(&cfg.Sessions, "sessions", 1, "concurrent closed loops")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured time (with -calls: the most it may take)")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unmeasured calls before the measured time")
	fs.Int64Var(&cfg.Calls, "calls", 0, "stop after this many measured calls (0: run for -duration)")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "bound on each call")
	fs.IntVar(&cfg.OpenConcurrency, "open-concurrency", 32, "sessions opened or closed at once")
	fs.IntVar(&cfg.RSSPID, "rss-pid", 0, "sample this process's RSS (VmRSS) and CPU time during the run")
	fs.IntVar(&cfg.Idle, "idle", 0, "idle mode: open N sessions, one call each, hold them, sample -rss-pid")
	fs.DurationVar(&cfg.Hold, "hold", 10*time.Second, "idle mode: how long to hold the sessions open")
	fs.StringVar(&cfg.Label, "label", "", "label copied into the result (e.g. direct, gateway) for -report")
	fs.BoolVar(&cfg.JSON, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&cfg.Medians, "medians", false, "with -report: one table of the medians over the rounds of each label and\ncell, with calls/s against the first and the second label")
	report := fs.Bool("report", false, "render the JSON results in the files named as arguments\n(one object per line) as markdown tables")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *report {
		if fs.NArg() == 0 {
			return nil, usagef("-report needs result files")
		}
		cfg.Report = fs.Args()
		return cfg, nil
	}
	if cfg.Medians {
		return nil, usagef("-medians applies to -report only")
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments %q", fs.Args())
	}
	for _, h := range headers {
		name, value, _ := parseHeader(h) // validated by Set
		cfg.Headers.Add(name, value)
	}
	switch {
	case cfg.URL == "" && cmdLine == "":
		return nil, usagef("one of -url or -cmd is required")
	case cfg.URL != "" && cmdLine != "":
		return nil, usagef("-url and -cmd are exclusive")
	case cfg.URL != "":
		if err := checkURL(cfg.URL, cfg.AllowRemote); err != nil {
			return nil, usageError{err}
		}
	default:
		words, err := splitWords(cmdLine)
		if err != nil {
			return nil, usagef("-cmd: %w", err)
		}
		cfg.Command = words
		if len(headers) > 0 || tokenFile != "" {
			return nil, usagef("-header and -token-file apply to -url only")
		}
	}
	if tokenFile != "" {
		if cfg.Headers.Get("Authorization") != "" {
			return nil, usagef("-token-file and -header 'Authorization: ...' are exclusive")
		}
		b, err := readLimited(tokenFile, maxTokenFile)
		if err != nil {
			return nil, usagef("-token-file: %w", err)
		}
		tok, err := parseToken(b)
		if err != nil {
			return nil, usagef("-token-file %s: %w", tokenFile, err)
		}
		cfg.Headers.Set("Authorization", "Bearer "+tok)
	}
	if cfg.Sessions < 1 {
		return nil, usagef("-sessions must be at least 1")
	}
	if cfg.Duration <= 0 || cfg.Warmup < 0 || cfg.Timeout <= 0 || cfg.Hold < 0 {
		return nil, usagef("-duration and -timeout must be positive, -warmup and -hold not negative")
	}
	if cfg.Calls < 0 || cfg.Idle < 0 || cfg.PayloadBytes < 0 || cfg.RSSPID < 0 {
		return nil, usagef("-calls, -idle, -payload and -rss-pid must not be negative")
	}
	if cfg.OpenConcurrency < 1 {
		return nil, usagef("-open-concurrency must be at least 1")
	}
	if cfg.Idle > 0 && cfg.Shared {
		return nil, usagef("-idle and -shared are exclusive")
	}
	if cfg.Tool == "" {
		return nil, usagef("-tool must not be empty")
	}
	args2, expect, err := buildArgs(argsJSON, cfg.Field, cfg.PayloadBytes, cfg.Verify)
	if err != nil {
		return nil, usageError{err}
	}
	cfg.Args, cfg.Expect = args2, expect
	if keys != "" {
		if cfg.Keys, err = parseKeys(keys); err != nil {
			return nil, usageError{err}
		}
		if cfg.Idle > 0 {
			return nil, usagef("-keys applies to load runs, not -idle")
		}
		if cfg.Keys.pool > 0 {
			if cfg.PoolArgs, cfg.PoolExpects, err = poolArgs(cfg, cfg.Keys.pool); err != nil {
				return nil, usageError{err}
			}
		}
	}
	return cfg, nil
}

// readLimited reads a file of at most limit bytes (one more is read to tell
// a file that is too large).
func readLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// checkURL accepts http and https URLs with a host; unless allowRemote the
// host must be "localhost" or a loopback IP literal. (The dialer checks the
// address it actually connects to as well.)
func checkURL(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("-url %q: scheme must be http or https", raw)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("-url %q: no host", raw)
	}
	if !allowRemote && !isLoopbackHost(u.Hostname()) {
		return fmt.Errorf("-url %q: host is not loopback (pass -allow-remote to load another machine)", raw)
	}
	return nil
}

// buildArgs returns the arguments object: -args (an object, or {}) with
// -field set to a generated string of payload bytes when payload > 0. With
// verify, expect is the string value of -field.
func buildArgs(argsJSON, field string, payload int, verify bool) (json.RawMessage, string, error) {
	obj := map[string]json.RawMessage{}
	if strings.TrimSpace(argsJSON) != "" {
		if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil {
			return nil, "", fmt.Errorf("-args must be a JSON object: %w", err)
		}
		if obj == nil { // the literal null
			return nil, "", errors.New("-args must be a JSON object, not null")
		}
	}
	if payload > 0 {
		b, _ := json.Marshal(makePayload(payload))
		obj[field] = b
	}
	var expect string
	if verify {
		raw, ok := obj[field]
		if !ok {
			return nil, "", fmt.Errorf("-verify: no argument %q (set -payload or put it in -args)", field)
		}
		if err := json.Unmarshal(raw, &expect); err != nil {
			return nil, "", fmt.Errorf("-verify: argument %q is not a string", field)
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, "", err
	}
	return b, expect, nil
}

// makePayload returns n bytes of printable ASCII that JSON encodes as itself.
func makePayload(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[i%len(alphabet)]
	}
	return string(b)
}
