package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errRedirect refuses every HTTP redirect: the harness talks only to -url.
var errRedirect = errors.New("mcpload follows no redirects")

// isLoopbackHost reports whether host is "localhost" or a loopback IP literal.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackOnly is a net.Dialer Control hook refusing any non-loopback peer,
// whatever a name resolved to.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to connect to non-loopback address %s", address)
	}
	return nil
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// newHTTPClient returns the client all sessions share: no proxy, no
// redirects, loopback peers only unless -allow-remote, and enough idle
// connections per host that closed loops reuse connections instead of
// churning through ephemeral ports.
func newHTTPClient(cfg *config, conns int) (*http.Client, *http.Transport) {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !cfg.AllowRemote {
		d.Control = loopbackOnly
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 2*conns + 16,
		IdleConnTimeout:     90 * time.Second,
	}
	var rt http.RoundTripper = tr
	if len(cfg.Headers) > 0 {
		rt = &headerTransport{base: tr, headers: cfg.Headers}
	}
	return &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}, tr
}

// session is one open MCP client session.
type session struct {
	cs *mcp.ClientSession
}

// opener opens sessions to the target of a config.
type opener struct {
	cfg    *config
	client *mcp.Client
	hc     *http.Client
	tr     *http.Transport
	logw   io.Writer
}

// lockedWriter serializes writes from the stderr copiers of several
// subprocesses.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newOpener(cfg *config, conns int, logw io.Writer) *opener {
	logw = &lockedWriter{w: logw}
	o := &opener{
		cfg: cfg,
		// No roots, sampling or elicitation: the smallest client there is.
		client: mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "0.1.0"},
			&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}),
		logw: logw,
	}
	if cfg.URL != "" {
		o.hc, o.tr = newHTTPClient(cfg, conns)
	}
	return o
}

func (o *opener) open(ctx context.Context) (*session, error) {
	var t mcp.Transport
	if o.cfg.URL != "" {
		t = &mcp.StreamableClientTransport{
			Endpoint:             o.cfg.URL,
			HTTPClient:           o.hc,
			DisableStandaloneSSE: o.cfg.NoSSE,
		}
	} else {
		cmd := exec.Command(o.cfg.Command[0], o.cfg.Command[1:]...)
		cmd.Stderr = o.logw
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	cs, err := o.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: o.cfg.Protocol})
	if err != nil {
		return nil, err
	}
	return &session{cs: cs}, nil
}

// openAll opens n sessions, at most -open-concurrency at a time. It returns
// the sessions that opened (in no particular order) and the errors of those
// that did not.
func (o *opener) openAll(ctx context.Context, n int, each func(context.Context, *session) error) ([]*session, []error) {
	var (
		mu   sync.Mutex
		out  = make([]*session, 0, n)
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, o.cfg.OpenConcurrency)
	)
	for range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			octx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
			defer cancel()
			s, err := o.open(octx)
			if err == nil && each != nil {
				if err = each(octx, s); err != nil {
					_ = s.cs.Close()
					s = nil
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out = append(out, s)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return out, errs
}

// closeAll closes every session, at most -open-concurrency at a time, and
// then the HTTP client's idle connections.
func (o *opener) closeAll(sessions []*session) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.cfg.OpenConcurrency)
	for _, s := range sessions {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_ = s.cs.Close()
		})
	}
	wg.Wait()
	if o.tr != nil {
		o.tr.CloseIdleConnections()
	}
}

// call makes one tool call and checks its result: with key, the call
// carries it as _meta.idempotencyKey; with -verify its first text content
// must be expect.
func call(ctx context.Context, cfg *config, cs *mcp.ClientSession, key string, args json.RawMessage, expect string) error {
	p := &mcp.CallToolParams{Name: cfg.Tool, Arguments: args}
	if key != "" {
		p.Meta = mcp.Meta{"idempotencyKey": key}
	}
	r, err := cs.CallTool(ctx, p)
	if err != nil {
		return err
	}
	if r.IsError {
		return fmt.Errorf("tool error: %s", firstText(r, 200))
	}
	if cfg.Verify {
		if len(r.Content) == 0 {
			return errors.New("verify: result has no content")
		}
		tc, ok := r.Content[0].(*mcp.TextContent)
		if !ok || tc.Text != expect {
			return fmt.Errorf("verify: result is not the %d-byte message sent", len(expect))
		}
	}
	return nil
}

func firstText(r *mcp.CallToolResult, limit int) string {
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if len(tc.Text) > limit {
				return tc.Text[:limit] + "..."
			}
			return tc.Text
		}
	}
	return "(no text)"
}

// worker is one closed loop. Only its own goroutine touches it until the
// loop has returned.
type worker struct {
	samples []time.Duration // latencies of successful measured calls
	errors  int64
	errMsgs []string // up to maxErrMsgs distinct messages
	last    time.Time
	lost    bool
	keys    *keyer // with -keys
	repeats int64  // measured calls whose key was sent before
}

const maxErrMsgs = 3

func (w *worker) noteErr(err error) {
	w.errors++
	msg := err.Error()
	if len(w.errMsgs) < maxErrMsgs && !slices.Contains(w.errMsgs, msg) {
		w.errMsgs = append(w.errMsgs, msg)
	}
}

// window is the shared schedule of a load run.
type window struct {
	start, end time.Time // a call is measured if it completes in [start, end]
	count      int64     // with -calls: measured calls to make, handed out as tickets
	tickets    atomic.Int64
	stop       atomic.Bool
}

func (w *worker) loop(ctx context.Context, cfg *config, cs *mcp.ClientSession, win *window) {
	for !win.stop.Load() && ctx.Err() == nil {
		t0 := time.Now()
		ticket := false
		if win.count > 0 && !t0.Before(win.start) {
			if win.tickets.Add(1) > win.count {
				return
			}
			ticket = true
		}
		key, args, expect, repeat := "", cfg.Args, cfg.Expect, false
		if w.keys != nil {
			key, args, expect, repeat = w.keys.next(cfg)
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		err := call(cctx, cfg, cs, key, args, expect)
		t1 := time.Now()
		cancel()
		measured := !t1.After(win.end) && (ticket || (win.count == 0 && !t1.Before(win.start)))
		if measured {
			if repeat {
				w.repeats++
			}
			if err != nil {
				w.noteErr(err)
			} else {
				w.samples = append(w.samples, t1.Sub(t0))
			}
			w.last = t1
		}
		if err != nil && errors.Is(err, mcp.ErrConnectionClosed) {
			w.lost = true
			return
		}
	}
}

// snapshot is the CPU clocks at one edge of the measured window.
type snapshot struct {
	self, machine, target time.Duration
	machineOK, targetOK   bool
}

func takeSnapshot(pid int) snapshot {
	s := snapshot{self: selfCPU()}
	var err error
	s.machine, err = readMachineCPU()
	s.machineOK = err == nil
	if pid > 0 {
		s.target, err = readProcCPU(pid)
		s.targetOK = err == nil
	}
	return s
}

// rssSampler records the maximum RSS of a process, sampled periodically.
type rssSampler struct {
	max    atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

func startRSSSampler(ctx context.Context, pid int, every time.Duration) *rssSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &rssSampler{cancel: cancel, done: make(chan struct{})}
	s.sample(pid)
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample(pid)
			}
		}
	}()
	return s
}

func (s *rssSampler) sample(pid int) int64 {
	kb, err := readRSS(pid)
	if err != nil {
		return 0
	}
	for {
		cur := s.max.Load()
		if kb <= cur || s.max.CompareAndSwap(cur, kb) {
			return kb
		}
	}
}

// stopAndMax stops sampling, takes one last sample and returns the maximum.
func (s *rssSampler) stopAndMax(pid int) int64 {
	s.cancel()
	<-s.done
	s.sample(pid)
	return s.max.Load()
}

// sleepUntil waits for t or ctx; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runLoad opens the sessions, runs the closed loops through warmup and the
// measured window, closes every session and summarizes.
func runLoad(ctx context.Context, cfg *config, logw io.Writer) (*result, error) {
	res := newResult(cfg, "load")
	conns := cfg.Sessions
	if cfg.Shared {
		conns = 1
	}
	var rss *rssSampler
	if cfg.RSSPID > 0 {
		kb, err := readRSS(cfg.RSSPID)
		if err != nil {
			return nil, fmt.Errorf("-rss-pid: %w", err)
		}
		res.TargetRSSStartKB = kb
		rss = startRSSSampler(ctx, cfg.RSSPID, 100*time.Millisecond)
		defer rss.cancel()
	}

	o := newOpener(cfg, conns, logw)
	sessions, errs := o.openAll(ctx, conns, nil)
	defer o.closeAll(sessions)
	if len(errs) > 0 {
		return nil, fmt.Errorf("opening %d sessions: %d failed, first: %w", conns, len(errs), errs[0])
	}
	res.Connections = len(sessions)
	res.Protocol = sessions[0].cs.InitializeResult().ProtocolVersion

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	now := time.Now()
	win := &window{start: now.Add(cfg.Warmup), count: cfg.Calls}
	win.end = win.start.Add(cfg.Duration)
	workers := make([]worker, cfg.Sessions)
	if cfg.Keys.on {
		run, err := newRunID()
		if err != nil {
			return nil, err
		}
		for i := range workers {
			workers[i].keys = &keyer{spec: cfg.Keys, prefix: fmt.Sprintf("mcpload-%s-%d-", run, i),
				args: cfg.PoolArgs, expects: cfg.PoolExpects}
		}
	}
	var wg sync.WaitGroup
	for i := range workers {
		cs := sessions[0].cs
		if !cfg.Shared {
			cs = sessions[i].cs
		}
		wg.Go(func() { workers[i].loop(runCtx, cfg, cs, win) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Stop early only if every loop has ended (a -calls run that is done,
	// or every session lost).
	finished := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	var before, after snapshot
	if sleepUntil(ctx, win.start) {
		before = takeSnapshot(cfg.RSSPID)
		timer := time.NewTimer(time.Until(win.end))
		select {
		case <-timer.C:
		case <-done:
		case <-ctx.Done():
		}
		timer.Stop()
		after = takeSnapshot(cfg.RSSPID)
	}
	win.stop.Store(true)
	// In-flight calls are bounded by -timeout; an interrupt cancels them.
	select {
	case <-done:
	case <-ctx.Done():
		cancel()
		<-done
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("interrupted: %w", err)
	}
	if finished() && cfg.Calls > 0 {
		// All tickets used before the deadline: the window ends at the last
		// measured completion.
		var last time.Time
		for i := range workers {
			if workers[i].last.After(last) {
				last = workers[i].last
			}
		}
		if last.After(win.start) && last.Before(win.end) {
			win.end = last
		}
	}

	var all []time.Duration
	for i := range workers {
		w := &workers[i]
		all = append(all, w.samples...)
		res.Errors += w.errors
		res.Repeats += w.repeats
		for _, m := range w.errMsgs {
			if len(res.ErrorSamples) < maxErrMsgs && !slices.Contains(res.ErrorSamples, m) {
				res.ErrorSamples = append(res.ErrorSamples, m)
			}
		}
		if w.lost {
			res.LostSessions++
		}
	}
	elapsed := win.end.Sub(win.start)
	res.setLatency(summarize(all), elapsed)
	res.Calls = int64(len(all)) + res.Errors
	res.setCPU(before, after, cfg.RSSPID > 0)
	if rss != nil {
		res.TargetRSSMaxKB = rss.stopAndMax(cfg.RSSPID)
	}
	return res, nil
}

// runIdle opens -idle sessions with one call each, holds them for -hold while
// sampling the RSS of -rss-pid, then closes them.
func runIdle(ctx context.Context, cfg *config, logw io.Writer) (*result, error) {
	res := newResult(cfg, "idle")
	res.Sessions = cfg.Idle
	if cfg.RSSPID > 0 {
		kb, err := readRSS(cfg.RSSPID)
		if err != nil {
			return nil, fmt.Errorf("-rss-pid: %w", err)
		}
		res.TargetRSSStartKB = kb
	}
	o := newOpener(cfg, cfg.OpenConcurrency, logw)
	var callErrs atomic.Int64
	t0 := time.Now()
	sessions, errs := o.openAll(ctx, cfg.Idle, func(ctx context.Context, s *session) error {
		if err := call(ctx, cfg, s.cs, "", cfg.Args, cfg.Expect); err != nil {
			callErrs.Add(1)
			return err
		}
		return nil
	})
	defer o.closeAll(sessions)
	res.OpenS = time.Since(t0).Seconds()
	res.Connections = len(sessions)
	res.OpenErrors = int64(len(errs))
	res.Errors = callErrs.Load()
	for _, err := range errs {
		if len(res.ErrorSamples) < maxErrMsgs && !slices.Contains(res.ErrorSamples, err.Error()) {
			res.ErrorSamples = append(res.ErrorSamples, err.Error())
		}
	}
	if len(sessions) > 0 {
		res.Protocol = sessions[0].cs.InitializeResult().ProtocolVersion
	}
	if kb, err := readRSS(selfPID()); err == nil {
		res.SelfRSSKB = kb
	}
	var rss *rssSampler
	if cfg.RSSPID > 0 {
		rss = startRSSSampler(ctx, cfg.RSSPID, 250*time.Millisecond)
		defer rss.cancel()
	}
	t1 := time.Now()
	if !sleepUntil(ctx, t1.Add(cfg.Hold)) {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	res.DurationS = time.Since(t1).Seconds()
	if rss != nil {
		res.TargetRSSMaxKB = rss.stopAndMax(cfg.RSSPID)
		if kb, err := readRSS(cfg.RSSPID); err == nil {
			res.TargetRSSEndKB = kb
		}
	}
	return res, nil
}

// describeTarget is the -url, or the -cmd words joined.
func describeTarget(cfg *config) string {
	if cfg.URL != "" {
		return cfg.URL
	}
	return strings.Join(cfg.Command, " ")
}
