package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" && vendorResults[m.Params.Name] != "" {
				mu.Lock()
				counts[m.Params.Name]++
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				// SSE data may span lines: one data line per line.
				fmt.Fprint(w, "event: message\n")
				msg := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + vendorResults[m.Params.Name] + `}`
				for _, line := range bytes.Split([]byte(msg), []byte("\n")) {
					fmt.Fprintf(w, "data: %s\n", line)
				}
				fmt.Fprint(w, "\n")
				return
			}
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.Close()
	})
	return hs.URL + "/mcp", func(tool string) int {
		mu.Lock()
		defer mu.Unlock()
		return counts[tool]
	}
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
			yml := fmt.Sprintf(`listen: 127.0.0.1:0
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
`, sc.dsn(t), hashOf("alice-token"), upURL)
			g, url := serveGateway(t, yml, dir)
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
				rec, err := g.Store().GetRecord(ctx, store.RecordKey{Scope: JournalScope, RunID: runID, ToolCallID: callID})
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
