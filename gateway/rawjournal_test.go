package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/store"
)

// The results the vendor upstream writes for its tools, as bytes: a field
// the go-sdk's type does not know (x-vendor), HTML left unescaped and a
// line break between members (a re-encoding changes all three).
var vendorResults = map[string]string{
	"vendor": `{"content":[{"type":"text","text":"<b>paid</b> & done"}],"structuredContent":{"id":"p-1","html":"<i>"},` +
		"\n" + `"x-vendor":{"trace":"t-1","n":[1,2]}}`,
	"vendorfail": `{"content":[{"type":"text","text":"no <funds>"}],"isError":true,"x-vendor":7}`,
}

// blobSize is the size of the blob tool's text.
const blobSize = 128 << 10

// vendorUpstream is a real go-sdk server over streamable HTTP on
// 127.0.0.1 whose tools/call answers for vendorResults' tools are written
// on the wire as those bytes (one SSE event), counting the effects.
func vendorUpstream(t *testing.T) (url string, effects func(tool string) int) {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "vendor", Version: "1"}, nil)
	for name := range vendorResults {
		srv.AddTool(&mcp.Tool{Name: name, Description: "Answers the vendor's bytes.", InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, fmt.Errorf("%s is answered by the HTTP handler", name)
			})
	}
	srv.AddTool(&mcp.Tool{Name: "blob", Description: "Answers blobSize bytes of text.", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			counts["blob"]++
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("b", blobSize)}}}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := interceptCall(t, sdk, func(w http.ResponseWriter, name string, id json.RawMessage) bool {
		if vendorResults[name] == "" {
			return false
		}
		mu.Lock()
		counts[name]++
		mu.Unlock()
		writeEvent(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+vendorResults[name]+`}`)
		return true
	})
	t.Cleanup(func() {
		hs.CloseClientConnections()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return hs.URL + "/mcp", func(tool string) int {
		mu.Lock()
		defer mu.Unlock()
		return counts[tool]
	}
}

// vendorConfig is a gateway on store dsn in front of the vendor upstream
// at upURL, with the byte path on and alice's token.
func vendorConfig(dsn, upURL string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
store: %q
auth:
  tokens:
    - {sha256: %s, subject: alice}
http:
  bytePath: true
servers:
  up:
    type: streamable-http
    url: %s
    prefix: ""
`, dsn, hashOf("alice-token"), upURL)
}

// TestKeyedBytesRecordedAsSent: through a real gateway (byte path on, the
// audit trail on) in front of a real upstream, on a real SQLite file and
// real PostgreSQL, a keyed call answered by the byte sender is recorded in
// the journal as the upstream's result bytes exactly (a field the go-sdk's
// type does not know kept, nothing re-encoded), its replay answers the
// same result (content, structuredContent, isError) without a second
// effect, and the audit entry's outcome is tool_error for an isError
// result. On the old gateway, which decoded the bytes and the journal
// re-encoded them, the record lost x-vendor and escaped the HTML.
func TestKeyedBytesRecordedAsSent(t *testing.T) {
	stores := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "gh.db") }},
		{"postgres", func(t *testing.T) string {
			return pgtest.Schema(t, "gw_rawjournal", "the keyed byte path's records on PostgreSQL")
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			upURL, effects := vendorUpstream(t)
			dir := t.TempDir()
			g, url := serveGateway(t, vendorConfig(sc.dsn(t), upURL), dir)
			cs := session(t, url, "alice-token")
			call := func(tool, key string) (*mcp.CallToolResult, string) {
				t.Helper()
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{},
					Meta: mcp.Meta{"idempotencyKey": key}})
				if err != nil {
					t.Fatalf("%s %s: %v", tool, key, err)
				}
				b, _ := json.Marshal(res)
				return res, string(b)
			}
			record := func(tool, key string) store.Record {
				t.Helper()
				runID, callID := unitOfWork("alice", tool, key)
				rec, err := g.Store().GetRecord(ctx, store.RecordKey{Scope: journalScope, RunID: runID, ToolCallID: callID})
				if err != nil {
					t.Fatalf("record of %s: %v", key, err)
				}
				return rec
			}

			for _, tc := range []struct {
				tool, text string
				isError    bool
				state      store.State
				structured string
			}{
				{"vendor", "<b>paid</b> & done", false, store.StateSucceeded, `{"html":"\u003ci\u003e","id":"p-1"}`},
				{"vendorfail", "no <funds>", true, store.StateFailed, `null`},
			} {
				first, firstJSON := call(tc.tool, "k-"+tc.tool)
				again, againJSON := call(tc.tool, "k-"+tc.tool)
				if firstJSON != againJSON {
					t.Errorf("%s: the replay answers\n%s\nthe first call\n%s", tc.tool, againJSON, firstJSON)
				}
				for _, res := range []*mcp.CallToolResult{first, again} {
					sc, _ := json.Marshal(res.StructuredContent)
					if res.IsError != tc.isError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != tc.text || string(sc) != tc.structured {
						t.Errorf("%s: answered %+v (structuredContent %s)", tc.tool, res, sc)
					}
				}
				if n := effects(tc.tool); n != 1 {
					t.Errorf("%s: %d effects at the upstream, want 1", tc.tool, n)
				}
				rec := record(tc.tool, "k-"+tc.tool)
				if want := `{"result":` + vendorResults[tc.tool] + `}`; rec.State != tc.state || string(rec.Outcome) != want {
					t.Errorf("%s: record %s\n%s\nwant the upstream's bytes\n%s", tc.tool, rec.State, rec.Outcome, want)
				}
			}
			var sent []string
			for _, c := range loggedCalls(t, g) {
				if c.Sender != "" {
					sent = append(sent, c.Sender)
				}
			}
			if len(sent) != 2 || sent[0] != "bytes" || sent[1] != "bytes" {
				t.Errorf("senders %v, want the byte sender for both fresh calls", sent)
			}

			if err := g.audit.Flush(ctx); err != nil { // the replays' entries
				t.Fatal(err)
			}
			entries, err := g.Store().ListAudit(ctx, store.AuditFilter{Chain: g.audit.Chain()})
			if err != nil {
				t.Fatal(err)
			}
			outcomes := map[string][]string{}
			for _, en := range entries {
				outcomes[en.Tool] = append(outcomes[en.Tool], en.Kind+":"+en.Outcome)
			}
			if got := fmt.Sprint(outcomes["vendor"]); got != "[call:ok call:ok]" {
				t.Errorf("vendor's audit entries %s", got)
			}
			if got := fmt.Sprint(outcomes["vendorfail"]); got != "[call:tool_error call:tool_error]" {
				t.Errorf("vendorfail's audit entries %s", got)
			}
		})
	}
}

// TestKeyedBytesNotDecoded: a fresh keyed call of a large result (128 KiB
// of text) through a real gateway (byte path on, SQLite) allocates, over
// the same call without a key, less than 8 times the result's size: the
// journal copies the bytes into its record once (the SQLite store copies
// the record's outcome once more), nothing decodes or re-encodes them
// (measured 2.2-3.5 times: the unkeyed call's own allocations vary by
// about a result's size, with how the bytes arrive). The old keyed path
// decoded the result (the go-sdk's decoder) and re-encoded it for the
// journal: 10.5-11.5 times the result's size more than an unkeyed call.
// Allocated bytes are counted (runtime.MemStats.TotalAlloc), not timed.
func TestKeyedBytesNotDecoded(t *testing.T) {
	ctx := context.Background()
	upURL, effects := vendorUpstream(t)
	dir := t.TempDir()
	_, url := serveGateway(t, vendorConfig("sqlite:"+filepath.Join(dir, "gh.db"), upURL), dir)
	cs := session(t, url, "alice-token")
	n := 0
	call := func(keyed bool) {
		t.Helper()
		n++
		p := &mcp.CallToolParams{Name: "blob", Arguments: map[string]any{}}
		if keyed {
			p.Meta = mcp.Meta{"idempotencyKey": fmt.Sprintf("k-%d", n)}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError || len(res.Content) != 1 || len(res.Content[0].(*mcp.TextContent).Text) != blobSize {
			t.Fatalf("call: %v %v", res, err)
		}
	}
	// Rounds of 8 calls each way, alternating; the least a call took each
	// way is compared (another goroutine's allocations, a buffer that
	// grows once, only add).
	const calls, rounds = 8, 8
	allocated := func(keyed bool) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range calls {
			call(keyed)
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / calls
	}
	call(false) // warm-up
	call(true)
	unkeyed, keyed := uint64(math.MaxUint64), uint64(math.MaxUint64)
	for range rounds {
		unkeyed = min(unkeyed, allocated(false))
		keyed = min(keyed, allocated(true))
	}
	if got := effects("blob"); got != 2*(1+calls*rounds) {
		t.Fatalf("%d effects, want %d", got, 2*(1+calls*rounds))
	}
	extra := int64(keyed) - int64(unkeyed)
	t.Logf("per call: unkeyed %d B, keyed %d B, keyed extra %d B (%.2fx the result)", unkeyed, keyed, extra, float64(extra)/blobSize)
	if extra > 8*blobSize {
		t.Errorf("a keyed call allocates %d B more than an unkeyed one, %.2fx the %d B result: the result is copied more than the record needs",
			extra, float64(extra)/blobSize, blobSize)
	}
}
