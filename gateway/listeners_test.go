package gateway

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fdbudget"

	"github.com/gatehouse-dev/gatehouse/server"
)

// TestPlanListeners: every listener of the config gets the http: timeouts
// and a cap of its own (listen: http.maxConnections, or its default; the
// console and the metrics: 64) within the file-descriptor limit; a
// listener not configured gets no share; a limit too small is
// fdbudget.ErrLimit; a lowered http.maxConnections is warned about.
func TestPlanListeners(t *testing.T) {
	dir := t.TempDir()
	parse := func(text string) *Config {
		t.Helper()
		cfg, err := ParseConfig([]byte(text), filepath.Join(dir, "gatehouse.yaml"), dir)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	all := parse(`store: 'memory:'
http: {readTimeout: 3s, writeTimeout: 4s, connIdleTimeout: 5s, maxConnections: 20000}
console: {listen: 127.0.0.1:8081, admins: [{name: alice, sha256: ` + strings.Repeat("a", 64) + `}]}
metrics: {listen: 127.0.0.1:9090}
`)
	ls, err := planListeners(all, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	timeouts := server.HTTPLimits{ReadTimeout: 3 * time.Second, WriteTimeout: 4 * time.Second, IdleTimeout: 5 * time.Second}
	for name, tc := range map[string]struct {
		got  server.HTTPLimits
		caps int
	}{"listen": {ls.MCP, 20000}, "console": {ls.Console, 64}, "metrics": {ls.Metrics, 64}} {
		want := timeouts
		want.MaxConns = tc.caps
		if tc.got != want {
			t.Errorf("%s: %+v; want %+v", name, tc.got, want)
		}
	}
	if ls.Budget.FDLimit != 1<<20 || ls.Budget.Reserve != 1<<18 || len(ls.Budget.Listeners) != 3 {
		t.Errorf("budget: %+v", ls.Budget)
	}

	// At the usual soft limit, listen gets what is left.
	ls, err = planListeners(all, 1024)
	if err != nil || ls.MCP.MaxConns != 640 || ls.Console.MaxConns != 64 || ls.Metrics.MaxConns != 64 {
		t.Errorf("limit 1024: %+v, %v", ls, err)
	}
	var logs bytes.Buffer
	(&Gateway{cfg: all, log: slog.New(slog.NewTextHandler(&logs, nil))}).logListeners(ls)
	for _, want := range []string{"gateway: connection caps", "fdLimit=1024", "reserve=256", "listen=640", "console.listen=64",
		"metrics.listen=64", "level=WARN", "http.maxConnections lowered", "asked=20000", "cap=640"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}

	// Only listen, with the defaults.
	plain := parse("store: 'memory:'\n")
	ls, err = planListeners(plain, 1<<20)
	if err != nil || ls.MCP.MaxConns != server.DefaultMaxConns || ls.MCP.ReadTimeout != 0 || ls.Console != (server.HTTPLimits{}) ||
		ls.Metrics != (server.HTTPLimits{}) || len(ls.Budget.Listeners) != 1 {
		t.Errorf("listen alone: %+v, %v", ls, err)
	}
	logs.Reset()
	(&Gateway{cfg: plain, log: slog.New(slog.NewTextHandler(&logs, nil))}).logListeners(ls)
	if strings.Contains(logs.String(), "WARN") {
		t.Errorf("a default cap warned:\n%s", logs.String())
	}

	if _, err := planListeners(all, 300); !errors.Is(err, fdbudget.ErrLimit) {
		t.Errorf("limit 300: %v", err)
	}
}
