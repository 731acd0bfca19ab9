package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/cmd/gatehouse/internal/console"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/gcfloor"
)

// defaultPlugin is the plugin `gatehouse serve` runs without --config,
// relative to the working directory (a Gatehouse checkout).
const defaultPlugin = "examples/plugins/hello"

func newServeCmd() *cobra.Command {
	var sf storeFlags
	var stdio bool
	var logFormat, listen string
	var heapFloor int
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the tools of the configured plugins as one hardened MCP endpoint",
		Long: "serve loads the plugins and servers of the config, connects them, and serves their tools at\n" +
			"http://<listen>/mcp (or over stdin/stdout with --stdio), with bearer tokens, per-tool visibility,\n" +
			"rate limits, dedup, the firewall and approvals (docs/gateway.md). Without --config it serves the\n" +
			"example plugin " + defaultPlugin + " on .gatehouse/gatehouse.db.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The log's lines are written together, within
			// logFlushEvery (warnings and errors at once), and all of
			// them before serve returns.
			lw := newLogWriter(cmd.ErrOrStderr())
			defer lw.Close()
			log, err := newLogger(lw, logFormat)
			if err != nil {
				return err
			}
			if heapFloor < 0 || heapFloor > maxHeapFloorMiB {
				return usagef("--heap-floor-mib must be from 0 (Go's defaults) to %d, not %d", maxHeapFloorMiB, heapFloor)
			}
			cfg, err := serveConfig(&sf)
			if err != nil {
				return configErr(err)
			}
			if fl := startHeapFloor(heapFloor, log); fl != nil {
				defer fl.Stop()
			}
			// At once: what follows (the store, the servers) may take a while.
			log.Info("gatehouse: starting", "version", versionString(), "config", cmp.Or(sf.config, "(none: the example plugin "+defaultPlugin+")"))
			if cmd.Flags().Changed("listen") {
				if err := cfg.SetListen(listen); err != nil {
					return configErr(err)
				}
			}
			// The executor's instance: GATEHOUSE_INSTANCE (on Kubernetes, the
			// pod's name) over the config's instance.
			if v := os.Getenv("GATEHOUSE_INSTANCE"); v != "" {
				if err := cfg.SetInstance(v, "$GATEHOUSE_INSTANCE"); err != nil {
					return configErr(err)
				}
			}
			opts := &gateway.Options{Logger: log, StoreDSN: sf.store, Version: Version, Instance: cfg.Instance} // upstreams' stderr: into the log, as data
			ctx := cmd.Context()
			g, err := gateway.New(ctx, cfg, opts)
			if err != nil {
				return configErr(err)
			}
			defer g.Close()
			return serveListeners(ctx, g, cfg, log, stdio, net.Listen)
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&stdio, "stdio", false, "serve one MCP session over stdin/stdout instead of HTTP")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	cmd.Flags().StringVar(&listen, "listen", "", "listen address (overrides the config's listen)")
	cmd.Flags().IntVar(&heapFloor, "heap-floor-mib", defaultHeapFloorMiB,
		"let the heap grow at least this many MiB between garbage collections (0: Go's defaults; not used when GOGC or GOMEMLIMIT is set)")
	return cmd
}

// defaultHeapFloorMiB is serve's floor under the GC's heap goal: a
// gateway's live heap is a few MiB, and with Go's defaults it collects
// every few hundred calls (docs/BENCHMARKS.md, "A floor under the heap").
const defaultHeapFloorMiB = 16

// maxHeapFloorMiB bounds --heap-floor-mib (1 TiB).
const maxHeapFloorMiB = 1 << 20

// startHeapFloor starts a floor of mib MiB under the heap goal, unless mib
// is 0 or the environment sets GOGC or GOMEMLIMIT (the operator's own
// tuning wins): then nil.
func startHeapFloor(mib int, log *slog.Logger) *gcfloor.Floor {
	if mib == 0 {
		return nil
	}
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if os.Getenv(v) != "" {
			log.Debug("gatehouse: no heap floor: the GC is tuned by the environment", "var", v)
			return nil
		}
	}
	return gcfloor.Start(uint64(mib) << 20)
}

// listenFunc opens a listener (net.Listen; tests wrap it).
type listenFunc func(network, address string) (net.Listener, error)

// serveListeners serves g until ctx ends: the metrics and the console on
// listeners of their own when configured, then the MCP endpoint on listen
// (or one session over stdin/stdout with stdio). Every listener is opened
// through listen.
func serveListeners(ctx context.Context, g *gateway.Gateway, cfg *gateway.Config, log *slog.Logger, stdio bool, listen listenFunc) error {
	// One policy for every listener (gateway.Listeners): the http:
	// timeouts, and a cap each within the file-descriptor limit. A limit
	// too small for them stops the start here, before any listener.
	if _, err := g.Listeners(); err != nil {
		return err
	}
	if cfg.Metrics != nil {
		mln, err := listen("tcp", cfg.Metrics.Listen)
		if err != nil {
			return fmt.Errorf("listening on %s (metrics.listen): %w", cfg.Metrics.Listen, err)
		}
		// Not ctx: the metrics (and their /readyz) are served through the
		// MCP endpoint's drain and shutdown, until serveListeners returns.
		mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := g.ServeMetrics(mctx, mln); err != nil {
				log.Error("gatehouse: metrics endpoint failed", "err", err)
			}
		}()
		defer func() { stop(); <-done }()
		log.Info("gatehouse: serving metrics", "url", "http://"+mln.Addr().String()+"/metrics", "addr", mln.Addr().String())
	}
	if cfg.Console != nil {
		stopConsole, err := serveConsole(ctx, g, cfg, log, listen)
		if err != nil {
			return err
		}
		defer stopConsole()
	}
	if stdio {
		log.Info("gatehouse: serving over stdio", "tools", len(g.Tools()))
		return g.ServeStdio(ctx)
	}
	ln, err := listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	if cfg.Auth == nil {
		log.Warn("gatehouse: no auth configured: serving on loopback only; every caller is subject \"local\"", "addr", ln.Addr().String())
	}
	log.Info("gatehouse: serving", "url", "http://"+ln.Addr().String()+"/mcp", "addr", ln.Addr().String(), "tools", len(g.Tools()))
	return g.Serve(ctx, ln)
}

// serveConsole serves the operator console (console.listen) over the
// gateway's store, with the limits of g.Listeners().Console, until ctx
// ends or the returned stop is called.
func serveConsole(ctx context.Context, g *gateway.Gateway, cfg *gateway.Config, log *slog.Logger, listen listenFunc) (stop func(), err error) {
	admins := make([]console.Admin, 0, len(cfg.Console.Admins))
	for _, a := range cfg.Console.Admins {
		admins = append(admins, console.Admin{Name: a.Name, SHA256: a.SHA256})
	}
	var verify func(context.Context, string) (string, time.Time, error)
	if scope := cfg.Console.AdminScope; scope != nil {
		verify = func(ctx context.Context, token string) (string, time.Time, error) {
			return g.VerifyAdmin(ctx, token, *scope)
		}
	}
	// The key of the gateway's checkpoints signs the operators' chain's too
	// (the gateway read it already, unless audit.enabled is false).
	signKey, err := auditSigningKey(cfg)
	if err != nil {
		log.Warn("gatehouse: the console's audit checkpoints are not signed: the key cannot be read", "err", err)
	}
	h, err := console.New(&console.Options{Store: g.Store(), Admins: admins, VerifyAdmin: verify, SessionTTL: cfg.Console.SessionTTL,
		SecureCookies: cfg.Console.SecureCookies, Logger: log, AuditKey: g.AuditPublicKey(), AuditSigningKey: signKey,
		Servers: func(ctx context.Context) []console.ServerStatus {
			var out []console.ServerStatus
			for _, s := range g.Ready(ctx).Servers {
				out = append(out, console.ServerStatus{Name: s.Name, State: s.State, Rule: s.Rule})
			}
			return out
		}})
	if err != nil {
		return nil, err
	}
	ls, err := g.Listeners()
	if err != nil {
		return nil, err
	}
	ln, err := listen("tcp", cfg.Console.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s (console.listen): %w", cfg.Console.Listen, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := console.Serve(cctx, ln, h, &ls.Console); err != nil {
			log.Error("gatehouse: console failed", "err", err)
		}
	}()
	log.Info("gatehouse: serving the console", "url", "http://"+ln.Addr().String()+"/", "addr", ln.Addr().String())
	return func() { cancel(); <-done }, nil
}

// serveConfig loads --config, or the built-in default: the example plugin.
func serveConfig(sf *storeFlags) (*gateway.Config, error) {
	if sf.config != "" {
		return gateway.LoadConfig(sf.config)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(filepath.Join(wd, defaultPlugin, "plugin.json")); err != nil || st.IsDir() {
		return nil, usagef("no --config given and the example plugin %s is not in %s: run from a Gatehouse checkout, or pass --config FILE (see docs/gateway.md)", defaultPlugin, wd)
	}
	return gateway.ParseConfig([]byte("plugins: ["+defaultPlugin+"]\n"), "", wd)
}

// configErr makes a *gateway.ConfigError a usage error (exit 2).
func configErr(err error) error {
	var ce *gateway.ConfigError
	if errors.As(err, &ce) {
		return &usageError{err}
	}
	return err
}

// newLogger returns serve's logger, in format, writing to w: what waits
// in w is written after every warning and error.
func newLogger(w *logWriter, format string) (*slog.Logger, error) {
	switch format {
	case "text", "":
		return slog.New(flushHandler{slog.NewTextHandler(w, nil), w}), nil
	case "json":
		return slog.New(flushHandler{newJSONHandler(w), w}), nil
	}
	return nil, usagef("--log-format must be text or json (got %q)", format)
}
