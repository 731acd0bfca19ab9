package gateway

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/testserver"
	"github.com/gatehouse-dev/gatehouse/store"
)

// writeCountedStore is a real store whose IncrBy calls (each a write: a
// transaction on SQLite, a round trip on PostgreSQL) are counted.
type writeCountedStore struct {
	store.Store
	writes atomic.Int64
}

func (c *writeCountedStore) IncrBy(ctx context.Context, key string, delta int64, expiresAt time.Time) (int64, error) {
	c.writes.Add(1)
	return c.Store.IncrBy(ctx, key, delta, expiresAt)
}

// replicaNow is the replicas' clock: one window of an hour for the whole
// test, whenever it runs.
var replicaNow = time.Date(2100, 1, 1, 0, 30, 0, 0, time.UTC)

// rateLimitReplica serves a gateway with a rate limit of maxCalls an hour
// for alice, on its own handle st of the shared store, in front of the
// upstream at upURL, and returns its MCP endpoint.
func rateLimitReplica(t *testing.T, st store.Store, instance, upURL string, maxCalls int) string {
	t.Helper()
	dir := t.TempDir()
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
auth:
  tokens:
    - {sha256: %s, subject: alice}
servers:
  up:
    type: streamable-http
    url: %s
    prefix: ""
rateLimit: {maxCalls: %d, window: 1h}
`, hashOf("alice-token"), upURL, maxCalls)
	cfg, err := ParseConfig([]byte(yml), filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := New(ctx, cfg, &Options{Store: st, Instance: instance, Clock: func() time.Time { return replicaNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	h, err := g.Handler()
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestRateLimitTwoReplicas: two gateways, each with its own handle on one
// store (a SQLite file; PostgreSQL), and eight sessions of one subject
// hammering the count tool of one real upstream until they are refused.
// The upstream counts exactly maxCalls effects less the eight initializes
// (never more: the quota is shared; never fewer: a lone subject gets its
// whole quota), the counter read back is maxCalls, and the store was
// written a few times per block, not once per call.
func TestRateLimitTwoReplicas(t *testing.T) {
	dbs := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "shared.db") }},
		{"postgres", func(t *testing.T) string {
			return pgtest.Schema(t, "rlrep", "the two-replica rate limit on PostgreSQL")
		}},
	}
	const maxCalls, perReplica = 200, 4
	for _, db := range dbs {
		t.Run(db.name, func(t *testing.T) {
			d := db.dsn(t)
			effects := filepath.Join(t.TempDir(), "effects")
			up := testserver.New(testserver.Config{Tools: []string{"count"}, EffectsFile: effects})
			ups := httptest.NewServer(up.Handler(false, nil))
			t.Cleanup(ups.Close)

			stores := []*writeCountedStore{{Store: openTestStore(t, d)}, {Store: openTestStore(t, d)}}
			urls := []string{
				rateLimitReplica(t, stores[0], "replica-a", ups.URL, maxCalls),
				rateLimitReplica(t, stores[1], "replica-b", ups.URL, maxCalls),
			}
			// Every session opens before any call (an initialize spends
			// one permit too).
			var sessions []*mcp.ClientSession
			for _, u := range urls {
				for range perReplica {
					sessions = append(sessions, session(t, u, "alice-token"))
				}
			}
			var ran atomic.Int64
			var wg sync.WaitGroup
			for _, cs := range sessions {
				wg.Go(func() {
					for {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						a := answer(cs.CallTool(ctx, &mcp.CallToolParams{Name: "count"}))
						cancel()
						switch c := refusalCode(a); {
						case c == "rate_limited":
							return
						case c != "" || strings.Contains(a, `"isError":true`) || !strings.Contains(a, `"content"`):
							t.Errorf("unexpected answer %s", a)
							return
						}
						ran.Add(1)
					}
				})
			}
			wg.Wait()
			b, err := os.ReadFile(effects)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(strings.Count(string(b), "\n"))
			want := int64(maxCalls - len(sessions))
			if n != want || ran.Load() != want {
				t.Fatalf("the upstream counted %d effects (%d calls answered) over two replicas; want exactly %d (%d less the %d initializes)",
					n, ran.Load(), want, maxCalls, len(sessions))
			}
			reader := openTestStore(t, d)
			key := store.Key("rl", "alice", fmt.Sprint(replicaNow.Truncate(time.Hour).UnixMilli()))
			if c, err := reader.GetCounter(context.Background(), key, time.Now()); err != nil || c != maxCalls {
				t.Fatalf("the counter reads %d (%v), want %d", c, err, maxCalls)
			}
			w := stores[0].writes.Load() + stores[1].writes.Load()
			t.Logf("%d calls and %d initializes over two replicas, %d counter writes", n, len(sessions), w)
			if w > 50 {
				t.Fatalf("%d counter writes for %d calls: the store is written per call", w, maxCalls)
			}
		})
	}
}

// BenchmarkGatewayCallRateLimited is BenchmarkGatewayCall with a rate
// limit kept in the SQLite store (a quota that never runs out): what the
// shared rate limit adds per call.
func BenchmarkGatewayCallRateLimited(b *testing.B) {
	up := benchEcho(b)
	dir := b.TempDir()
	yml := fmt.Sprintf("listen: 127.0.0.1:0\nstore: sqlite:%s\nrateLimit: {maxCalls: 1000000000, window: 1h}\nservers:\n  echo:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
		filepath.Join(dir, "gh.db"), up)
	_, url := serveGateway(b, yml, dir)
	benchCalls(b, url)
}
