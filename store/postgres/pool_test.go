package postgres_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

// A configuration pgxpool.ParseConfig did not make is refused with an
// error, not a panic, and nothing is dialled (the host does not resolve).
func TestOpenConfigRefusesHandBuiltConfig(t *testing.T) {
	cc, err := pgx.ParseConfig("postgres://gh@unreachable.invalid:1/gh?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]*pgxpool.Config{
		"nil":           nil,
		"no ConnConfig": {},
		"hand-built":    {ConnConfig: cc, MaxConns: 2},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := postgres.OpenConfig(t.Context(), cfg, nil)
			if !errors.Is(err, store.ErrInvalid) || s != nil {
				t.Fatalf("OpenConfig(%s) = %v, %v; want ErrInvalid", name, s, err)
			}
		})
	}
	if _, err := postgres.OpenConfig(t.Context(), &pgxpool.Config{}, &store.Options{MaxConns: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("negative MaxConns: %v", err)
	}
}

// Options.MaxConns overrides pool_max_conns, the caller's config is left
// alone, and the pool really opens no more than MaxConns connections.
func TestMaxConns(t *testing.T) {
	_, cfg := freshSchema(t)
	c := cfg()
	c.MaxConns = 6 // as pool_max_conns=6 would
	s := openCfg(t, c, &store.Options{MaxConns: 2, Durability: store.DurabilityPower})
	if c.MaxConns != 6 || c.ConnConfig.ConnectTimeout != 0 || c.ConnConfig.RuntimeParams["synchronous_commit"] != "" {
		t.Fatalf("OpenConfig modified the caller's config: MaxConns %d, ConnectTimeout %v, RuntimeParams %v",
			c.MaxConns, c.ConnConfig.ConnectTimeout, c.ConnConfig.RuntimeParams)
	}
	pool := postgres.PoolOf(s)
	if got := pool.Config().MaxConns; got != 2 {
		t.Fatalf("pool MaxConns = %d, want 2", got)
	}
	if got := pool.Config().ConnConfig.ConnectTimeout; got != postgres.DefaultConnectTimeout {
		t.Fatalf("ConnectTimeout = %v, want %v", got, postgres.DefaultConnectTimeout)
	}

	// Hold two transactions open: both connections are in use.
	ctx := t.Context()
	release := make(chan struct{})
	pids := make(chan int32, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			errs <- s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
				var pid int32
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					return err
				}
				pids <- pid
				<-release
				return nil
			})
		})
	}
	held := map[int32]bool{<-pids: true, <-pids: true}
	if len(held) != 2 {
		t.Fatalf("two open transactions share one backend: %v", held)
	}
	// A third statement cannot get a connection while both are held.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := s.DB().Exec(short, "SELECT 1")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third statement with both connections held: %v, want it to wait for a connection", err)
	}
	close(release)
	wg.Wait()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var pid int32
	if err := s.DB().QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil || !held[pid] {
		t.Fatalf("after release: backend %d (%v), want one of %v", pid, err, held)
	}
	if n := pool.Stat().NewConnsCount(); n != 2 {
		t.Fatalf("pool opened %d connections, want 2", n)
	}
}

// Without Options.MaxConns the config's own limit (pool_max_conns) stands.
func TestMaxConnsFromURL(t *testing.T) {
	_, cfg := freshSchema(t)
	c, err := pgxpool.ParseConfig(cfg().ConnString() + "&pool_max_conns=3")
	if err != nil {
		t.Fatal(err)
	}
	c.ConnConfig.RuntimeParams = cfg().ConnConfig.RuntimeParams // search_path
	s := openCfg(t, c, nil)
	if got := postgres.PoolOf(s).Config().MaxConns; got != 3 {
		t.Fatalf("pool MaxConns = %d, want 3 from pool_max_conns", got)
	}
}

// Durability "power" forces synchronous_commit=on on every connection,
// even over a caller's explicit off; "process" leaves the caller's setting.
func TestDurabilityRuntimeParam(t *testing.T) {
	_, cfg := freshSchema(t)
	for d, want := range map[store.Durability]string{store.DurabilityPower: "on", store.DurabilityProcess: "off"} {
		c := cfg()
		c.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
		s := openCfg(t, c, &store.Options{Durability: d, MaxConns: 3})
		// Three concurrent transactions use three connections; each sees it.
		ctx := t.Context()
		var wg sync.WaitGroup
		var ready sync.WaitGroup
		ready.Add(3)
		got := make([]string, 3)
		errs := make([]error, 3)
		for i := range 3 {
			wg.Go(func() {
				errs[i] = s.DB().InTx(ctx, func(tx sqlstore.Querier) error {
					ready.Done()
					ready.Wait() // all three hold a connection at once
					return tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got[i])
				})
			})
		}
		wg.Wait()
		for i := range 3 {
			if errs[i] != nil || got[i] != want {
				t.Fatalf("%s: connection %d: synchronous_commit = %q, %v; want %q", d, i, got[i], errs[i], want)
			}
		}
		if n := postgres.PoolOf(s).Stat().NewConnsCount(); n != 3 {
			t.Fatalf("%s: %d connections opened, want 3", d, n)
		}
	}
}

// Hooks in the caller's config survive OpenConfig.
func TestAfterConnectKept(t *testing.T) {
	_, cfg := freshSchema(t)
	c := cfg()
	var calls atomic.Int32
	c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		calls.Add(1)
		_, err := conn.Exec(ctx, "SET application_name = 'gatehouse-hook-test'")
		return err
	}
	s := openCfg(t, c, nil)
	var name string
	if err := s.DB().QueryRow(t.Context(), "SHOW application_name").Scan(&name); err != nil || name != "gatehouse-hook-test" {
		t.Fatalf("application_name = %q, %v", name, err)
	}
	if calls.Load() == 0 {
		t.Fatal("AfterConnect never ran")
	}
}

// Every path through a closed store reports store.ErrClosed.
func TestClosedStoreEveryPath(t *testing.T) {
	s := openFresh(t, nil)
	s.Close()
	ctx := t.Context()
	db := s.DB()
	_, errExec := db.Exec(ctx, "SELECT 1")
	var one int
	errRow := db.QueryRow(ctx, "SELECT 1").Scan(&one)
	_, errQuery := db.Query(ctx, "SELECT 1")
	ran := false
	errTx := db.InTx(ctx, func(sqlstore.Querier) error { ran = true; return nil })
	for name, err := range map[string]error{"Exec": errExec, "QueryRow": errRow, "Query": errQuery, "InTx": errTx} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if ran {
		t.Error("InTx ran its function on a closed store")
	}
	if _, err := s.GetServer(ctx, "x"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("GetServer after Close: %v, want ErrClosed", err)
	}
}

// Close stops every goroutine the pool started (the health check
// included), even with the health check due often.
func TestCloseStopsGoroutines(t *testing.T) {
	_, cfg := freshSchema(t)
	opts := goleak.IgnoreCurrent()
	c := cfg()
	c.HealthCheckPeriod = 10 * time.Millisecond
	c.MinConns = 1
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := postgres.OpenConfig(ctx, c, &store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutServer(ctx, store.Server{ID: "a", Name: "a", Type: "stdio"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, opts)
}

// quieter is what a raw connection (internal/rawio.Conn) has beside
// net.Conn.
type quieter interface{ Quiet() bool }

// TestConnectionsReadRaw: the pool's TCP connections to the server are
// read and written with raw system calls, through the caller's own
// DialFunc when it sets one; a connection that dialer wraps in a type of
// its own is used as it is; and the store works over both.
func TestConnectionsReadRaw(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		wrap    bool // the caller's DialFunc returns its own type
		wantRaw bool
	}{
		{"default dialer", false, true},
		{"caller's dialer", false, true},
		{"caller's own conn type", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cfg := freshSchema(t)
			c := cfg()
			var dials atomic.Int64
			if tc.name != "default dialer" {
				var d net.Dialer
				c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					conn, err := d.DialContext(ctx, network, addr)
					if err != nil || !tc.wrap {
						return conn, err
					}
					return ownConn{conn}, nil
				}
			}
			s := openCfg(t, c, nil)
			if tc.name != "default dialer" && dials.Load() == 0 {
				t.Fatal("the caller's DialFunc was not used")
			}
			conn, err := postgres.PoolOf(s).Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			nc := conn.Conn().PgConn().Conn()
			conn.Release()
			if _, raw := nc.(quieter); raw != tc.wantRaw {
				t.Fatalf("the pool's connection is a %T; raw = %v, want %v", nc, raw, tc.wantRaw)
			}
			if _, isOwn := nc.(ownConn); tc.wrap && !isOwn {
				t.Fatalf("the caller's connection type was replaced by %T", nc)
			}
			// Round trips over it: an entry appended, then read back.
			if _, err := s.AppendAuditLinked(ctx, []store.AuditEntry{{Chain: "raw", Kind: "call", Subject: "s", Server: "x", Tool: "t",
				Outcome: "ok", Instance: "i", At: time.Now()}}, audit.Link); err != nil {
				t.Fatal(err)
			}
			got, err := s.ListAudit(ctx, store.AuditFilter{Chain: "raw"})
			if err != nil || len(got) != 1 || got[0].Tool != "t" {
				t.Fatalf("read back %+v, %v", got, err)
			}
		})
	}
}

// ownConn is a caller's connection type around a TCP connection.
type ownConn struct{ net.Conn }
