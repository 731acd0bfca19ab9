package toolset

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

// BenchmarkConnectSession: what a relay pays for a caller's own upstream
// session (Upstream.Connect, then Close), the listing that judges it
// included: a stdio server (a process per session, one tool) and a
// 200-tool server over streamable HTTP on loopback (the fixture, -generate
// 200, 450 KB of listing), each on a SQLite store, with a notification tap
// as the relay's. The listing is the trusted one, the usual case: it is
// compared with the shared session's, no store access.
//
//	go test ./toolset -run '^$' -bench ConnectSession -benchtime 50x -count 3
func BenchmarkConnectSession(b *testing.B) {
	for _, bc := range []struct {
		name string
		srv  func(b *testing.B) Server
	}{
		{"stdio", func(*testing.B) Server { return stdio("s", "-tools", "echo") }},
		{"http-200tools", func(b *testing.B) Server {
			return remote("s", startHTTP(b, "127.0.0.1:0", "-generate", "200").URL(""), plugin.TransportStreamableHTTP)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "b.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ts, err := Open(ctx, []Server{bc.srv(b)}, &Options{Store: st})
			if err != nil {
				b.Fatal(err)
			}
			defer ts.Close()
			ups, err := ts.Upstreams(ctx)
			if err != nil || len(ups) != 1 {
				b.Fatalf("upstreams %v %v", ups, err)
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "relay", Version: "1"}, nil)
			tap := func(string, json.RawMessage) {}
			start := cputime.Start(b)
			for b.Loop() {
				s, err := ups[0].Connect(ctx, client, tap)
				if err != nil {
					b.Fatal(err)
				}
				_ = s.Close()
			}
			cputime.Report(b, start)
		})
	}
}
