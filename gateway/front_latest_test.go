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
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// latestUpstream is a go-sdk server over streamable HTTP on 127.0.0.1 with
// a tool for each kind of answer, counting the calls it gets.
func latestUpstream(t *testing.T) (url string, calls func() int) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	n := 0
	var mu = make(chan struct{}, 1)
	count := func() {
		mu <- struct{}{}
		n++
		<-mu
	}
	add := func(name string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			count()
			return h(ctx, req)
		})
	}
	echo := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
	}
	add("echo", echo)
	add("secret", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the secret"}}}, nil
	})
	add("structured", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}, StructuredContent: map[string]any{"n": 1, "s": "<&>"}}, nil
	})
	add("toolerr", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}, IsError: true}, nil
	})
	add("rpcerr", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32050, Message: "the upstream refuses"}
	})
	add("badparams", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such thing"}
	})
	add("empty", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	add("withmeta", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Meta: mcp.Meta{"up/trace": "t1"}, Content: []mcp.Content{&mcp.TextContent{Text: "m"}}}, nil
	})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Method") == "tools/call" && r.Header.Get("Mcp-Name") == "pretty" {
			// A result written over several lines (a JSON encoder's
			// indentation): the answer is decoded, not spliced.
			count()
			body, _ := io.ReadAll(r.Body)
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(body, &req)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\n  \"content\": [{\"type\":\"text\",\"text\":\"p\"}],\n  \"isError\": false\n}}", req.ID)
			return
		}
		sdk.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	s.AddTool(&mcp.Tool{Name: "pretty", InputSchema: map[string]any{"type": "object"}}, echo) // listed; answered above
	return hs.URL + "/mcp", func() int {
		mu <- struct{}{}
		defer func() { <-mu }()
		return n
	}
}

// latestGateway serves a gateway with http.bothRevisions (or
// http.stateless) in front of up, with the byte path on or off, tokens
// "alice" (every tool) and "bob" (not secret).
func latestGateway(t *testing.T, up, httpExtra string, bytePath bool) (*Gateway, string) {
	t.Helper()
	dir := t.TempDir()
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
http:
  bytePath: %v
%s
auth:
  tokens:
    - {sha256: %s, subject: alice}
    - {sha256: %s, subject: bob, scopes: ["tool:echo", "tool:structured", "tool:toolerr", "tool:rpcerr", "tool:badparams", "tool:empty", "tool:withmeta", "tool:pretty"]}
servers:
  up:
    type: streamable-http
    url: %s
    prefix: ""
`, filepath.Join(dir, "gh.db"), bytePath, httpExtra, hashOf("alice-token"), hashOf("bob-token"), up)
	return serveGateway(t, yml, dir)
}

// latestReq is one HTTP request at 2026-07-28.
type latestReq struct {
	token string
	hdr   map[string]string // "" deletes
	body  string
}

// latestCall is a tools/call at 2026-07-28 as the go-sdk's client writes
// it, with meta's members added to its _meta.
func latestCall(id int, name, args, meta string) string {
	if args == "" {
		args = `{"text":"h\u00e9 \"x\" <&>"}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%s"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, id, name, args, meta)
}

// send posts q to url and returns the status, the headers a caller sees
// and the body.
func (q latestReq) send(t *testing.T, url string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(q.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	var name struct {
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal([]byte(q.body), &name)
	req.Header.Set("Mcp-Name", name.Params.Name)
	req.Header.Set("Authorization", "Bearer "+q.token)
	for k, v := range q.hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, k := range []string{"Content-Type", "Cache-Control", "Connection", "Mcp-Session-Id", "Www-Authenticate", "Allow"} {
		hs = append(hs, k+"="+resp.Header.Get(k))
	}
	return resp.StatusCode, strings.Join(hs, "|"), body
}

// fronts returns the fronts that read g's calls since n calls, in order.
func fronts(t *testing.T, g *Gateway, n int) []string {
	t.Helper()
	var out []string
	for _, l := range loggedCalls(t, g)[n:] {
		out = append(out, l.Front)
	}
	return out
}

// TestLatestFrontAnswersAsTheGoSDK: a tools/call at 2026-07-28 answered by
// the byte path gets, byte for byte, the go-sdk path's answer (the same
// request to a gateway with http.bytePath: false): status, headers, body;
// for results, tool errors, upstream errors, hidden and unknown tools,
// large arguments, and every header or _meta the go-sdk refuses or that
// the byte path leaves to it. Each case also says which front must serve
// it on the byte path.
func TestLatestFrontAnswersAsTheGoSDK(t *testing.T) {
	for _, mode := range []struct{ name, http string }{
		{"sse", "  bothRevisions: true"},
		{"json", "  bothRevisions: true\n  jsonResponse: true"},
		{"stateless", "  stateless: true"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			up, upCalls := latestUpstream(t)
			gb, bytesURL := latestGateway(t, up, mode.http, true)
			gs, sdkURL := latestGateway(t, up, mode.http, false)
			big := `{"text":"` + strings.Repeat("y", 1<<20) + `"}`
			const caps = `"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},`
			for _, c := range []struct {
				name  string
				q     latestReq
				front string // the byte path's front ("": none, refused before)
			}{
				{"echo", latestReq{token: "alice-token", body: latestCall(1, "echo", "", "")}, "bytes"},
				{"string id", latestReq{token: "alice-token", body: strings.Replace(latestCall(1, "echo", "", ""), `"id":1`, `"id":"a-1"`, 1)}, "bytes"},
				{"structured", latestReq{token: "alice-token", body: latestCall(2, "structured", "{}", "")}, "bytes"},
				{"tool error", latestReq{token: "alice-token", body: latestCall(3, "toolerr", "{}", "")}, "bytes"},
				{"upstream error", latestReq{token: "alice-token", body: latestCall(4, "rpcerr", "{}", "")}, "bytes"},
				{"upstream invalid params", latestReq{token: "alice-token", body: latestCall(5, "badparams", "{}", "")}, "bytes"},
				{"empty result", latestReq{token: "alice-token", body: latestCall(6, "empty", "{}", "")}, "bytes"},
				{"result with _meta", latestReq{token: "alice-token", body: latestCall(7, "withmeta", "{}", "")}, "bytes"},
				{"pretty result", latestReq{token: "alice-token", body: latestCall(8, "pretty", "{}", "")}, "bytes"},
				{"large arguments", latestReq{token: "alice-token", body: latestCall(9, "echo", big, "")}, "bytes"},
				{"no arguments", latestReq{token: "alice-token", body: strings.Replace(latestCall(10, "empty", "{}", ""), `"arguments":{},`, "", 1)}, "bytes"},
				{"forwarded _meta and key", latestReq{token: "alice-token", body: latestCall(11, "echo", "", `"idempotencyKey":"k-11","app/x":[1,"two"],`)}, "bytes"},
				{"hidden tool", latestReq{token: "bob-token", body: latestCall(12, "secret", "", "")}, "bytes"},
				{"no clientInfo", latestReq{token: "alice-token", body: strings.Replace(latestCall(13, "echo", "", ""), `"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"},`, "", 1)}, "bytes"},
				{"sampling announced", latestReq{token: "alice-token", body: strings.Replace(latestCall(14, "echo", "", ""), `{"roots":{"listChanged":true}}`, `{"sampling":{},"elicitation":{"form":{}}}`, 1)}, "bytes"},
				{"unknown tool", latestReq{token: "alice-token", body: latestCall(15, "nosuch", "", "")}, "sdk"},
				{"progress token", latestReq{token: "alice-token", body: latestCall(16, "echo", "", `"progressToken":"p",`)}, "sdk"},
				{"no Mcp-Method", latestReq{token: "alice-token", hdr: map[string]string{"Mcp-Method": ""}, body: latestCall(17, "echo", "", "")}, ""},
				{"other Mcp-Method", latestReq{token: "alice-token", hdr: map[string]string{"Mcp-Method": "tools/list"}, body: latestCall(18, "echo", "", "")}, ""},
				{"no Mcp-Name", latestReq{token: "alice-token", hdr: map[string]string{"Mcp-Name": ""}, body: latestCall(19, "echo", "", "")}, ""},
				{"other Mcp-Name", latestReq{token: "alice-token", hdr: map[string]string{"Mcp-Name": "structured"}, body: latestCall(20, "echo", "", "")}, ""},
				{"Mcp-Param header", latestReq{token: "alice-token", hdr: map[string]string{"Mcp-Param-Text": "x"}, body: latestCall(21, "echo", "", "")}, "sdk"},
				{"_meta revision differs", latestReq{token: "alice-token", body: strings.Replace(latestCall(22, "echo", "", ""), `/protocolVersion":"2026-07-28"`, `/protocolVersion":"2026-07-29"`, 1)}, ""},
				{"no _meta revision", latestReq{token: "alice-token", body: strings.Replace(latestCall(23, "echo", "", ""), `,"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, "", 1)}, ""},
				{"no _meta", latestReq{token: "alice-token", body: `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"echo","arguments":{}}}`}, ""},
				{"no capabilities", latestReq{token: "alice-token", body: strings.Replace(latestCall(25, "echo", "", ""), caps, "", 1)}, ""},
				{"capabilities not an object", latestReq{token: "alice-token", body: strings.Replace(latestCall(26, "echo", "", ""), `{"roots":{"listChanged":true}}`, `7`, 1)}, ""},
				{"clientInfo not an object", latestReq{token: "alice-token", body: strings.Replace(latestCall(27, "echo", "", ""), `{"name":"test","version":"1"}`, `"me"`, 1)}, ""},
				{"capabilities spaced", latestReq{token: "alice-token", body: strings.Replace(latestCall(28, "echo", "", ""), `{"roots":{"listChanged":true}}`, `{ "roots": {"listChanged": true} }`, 1)}, "sdk"},
				{"log level", latestReq{token: "alice-token", body: latestCall(29, "echo", "", `"io.modelcontextprotocol/logLevel":"debug",`)}, "sdk"},
				{"notification", latestReq{token: "alice-token", body: strings.Replace(latestCall(30, "echo", "", ""), `"id":30,`, "", 1)}, ""},
				{"batch", latestReq{token: "alice-token", body: "[" + latestCall(31, "echo", "", "") + "]"}, ""},
				{"session header", latestReq{token: "alice-token", hdr: map[string]string{"Mcp-Session-Id": "abc"}, body: latestCall(32, "echo", "", "")}, "sdk"},
				{"Last-Event-ID", latestReq{token: "alice-token", hdr: map[string]string{"Last-Event-ID": "x_1"}, body: latestCall(33, "echo", "", "")}, ""},
				{"text/plain", latestReq{token: "alice-token", hdr: map[string]string{"Content-Type": "text/plain"}, body: latestCall(34, "echo", "", "")}, ""},
				{"accepts JSON only", latestReq{token: "alice-token", hdr: map[string]string{"Accept": "application/json"}, body: latestCall(35, "echo", "", "")}, ""},
				{"wrong token", latestReq{token: "mallory-token", body: latestCall(36, "echo", "", "")}, ""},
				{"unsupported revision", latestReq{token: "alice-token", hdr: map[string]string{"Mcp-Protocol-Version": "2027-01-01"}, body: latestCall(37, "echo", "", "")}, ""},
			} {
				nb, ns, callsBefore := len(loggedCalls(t, gb)), len(loggedCalls(t, gs)), upCalls()
				s1, h1, b1 := c.q.send(t, bytesURL)
				mid := upCalls()
				s2, h2, b2 := c.q.send(t, sdkURL)
				if s1 != s2 || h1 != h2 || !bytes.Equal(b1, b2) {
					if len(b1) > 600 {
						b1, b2 = b1[:600], b2[:600]
					}
					t.Errorf("%s: byte path and go-sdk path differ:\nbytes: %d %s %q\nsdk:   %d %s %q", c.name, s1, h1, b1, s2, h2, b2)
				}
				if mid-callsBefore != upCalls()-mid {
					t.Errorf("%s: the upstream got %d calls from the byte path, %d from the go-sdk path", c.name, mid-callsBefore, upCalls()-mid)
				}
				want := []string(nil)
				if c.front != "" {
					want = []string{c.front}
				}
				if got := fronts(t, gb, nb); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: served by %v on the byte path; want %v (%d %q)", c.name, got, want, s1, b1)
				}
				if c.front != "" {
					if got := fronts(t, gs, ns); fmt.Sprint(got) != "[sdk]" {
						t.Errorf("%s: served by %v with http.bytePath: false", c.name, got)
					}
				}
				if c.name == "echo" && (s1 != http.StatusOK || !bytes.Contains(b1, []byte(`"resultType":"complete"`)) || !bytes.Contains(b1, []byte(`"io.modelcontextprotocol/serverInfo":{"name":"gatehouse"`))) {
					t.Errorf("echo: %d %q", s1, b1)
				}
			}
		})
	}
}

// TestLatestFrontSDKClient: a go-sdk client at 2026-07-28 is served by the
// byte path, with the identity of its token, and reads the answer.
func TestLatestFrontSDKClient(t *testing.T) {
	up, _ := latestUpstream(t)
	g, url := latestGateway(t, up, "  bothRevisions: true", true)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: withBearer{"bob-token"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("revision %s", v)
	}
	n := len(loggedCalls(t, g))
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret"}); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("bob called secret: %v", err)
	}
	lines := loggedCalls(t, g)[n:]
	if len(lines) != 2 || lines[0].Front != "bytes" || lines[0].Subject != "bob" || lines[0].Outcome != "ok" || lines[1].Front != "bytes" || lines[1].Subject != "bob" {
		t.Fatalf("call lines: %+v", lines)
	}
}

// TestLatestFrontAttacks: a caller cannot get another identity or other
// capabilities from the byte path than from the go-sdk's: a body that
// names another tool than its Mcp-Name, a _meta that repeats or escapes
// its capabilities (a decoder keeps the last; one that kept the first
// would differ), an identity claimed in clientInfo. Each is answered as
// the go-sdk answers it, as the token's subject, and a hidden tool stays
// hidden.
func TestLatestFrontAttacks(t *testing.T) {
	up, upCalls := latestUpstream(t)
	gb, bytesURL := latestGateway(t, up, "  bothRevisions: true", true)
	_, sdkURL := latestGateway(t, up, "  bothRevisions: true", false)
	twice := strings.Replace(latestCall(1, "echo", "", ""), `"io.modelcontextprotocol/clientCapabilities":`, `"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientCapabilities":`, 1)
	escaped := strings.Replace(latestCall(2, "echo", "", ""), `"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}`,
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol\/clientCapabilities":{"sampling":{}}`, 1)
	for _, c := range []struct {
		name string
		q    latestReq
	}{
		{"Mcp-Name echo, body secret", latestReq{token: "bob-token", hdr: map[string]string{"Mcp-Name": "echo"}, body: latestCall(3, "secret", "", "")}},
		{"capabilities twice", latestReq{token: "bob-token", body: twice}},
		{"capabilities escaped", latestReq{token: "bob-token", body: escaped}},
		{"name twice", latestReq{token: "bob-token", hdr: map[string]string{"Mcp-Name": "echo"}, body: strings.Replace(latestCall(4, "secret", "", ""), `"name":"secret"`, `"name":"echo","name":"secret"`, 1)}},
		{"escaped name", latestReq{token: "bob-token", hdr: map[string]string{"Mcp-Name": "secret"}, body: strings.Replace(latestCall(5, "secret", "", ""), `"name":"secret"`, `"name":"s\u0065cret"`, 1)}},
		{"clientInfo claims alice", latestReq{token: "bob-token", body: strings.Replace(latestCall(6, "secret", "", ""), `"name":"test"`, `"name":"alice"`, 1)}},
		{"revision claimed twice", latestReq{token: "bob-token", body: strings.Replace(latestCall(7, "echo", "", ""), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"`, 1)}},
	} {
		before := upCalls()
		n := len(loggedCalls(t, gb))
		s1, h1, b1 := c.q.send(t, bytesURL)
		s2, h2, b2 := c.q.send(t, sdkURL)
		if s1 != s2 || h1 != h2 || !bytes.Equal(b1, b2) {
			t.Errorf("%s: byte path and go-sdk path differ:\nbytes: %d %s %q\nsdk:   %d %s %q", c.name, s1, h1, b1, s2, h2, b2)
		}
		for _, l := range loggedCalls(t, gb)[n:] {
			if l.Subject != "bob" || l.Front == "bytes" && strings.Contains(c.name, "twice") {
				t.Errorf("%s: %+v", c.name, l)
			}
		}
		if bytes.Contains(b1, []byte("the secret")) || bytes.Contains(b2, []byte("the secret")) {
			t.Errorf("%s: bob got secret's answer: %q", c.name, b1)
		}
		if strings.Contains(c.name, "secret") && upCalls() != before {
			t.Errorf("%s: a call reached the upstream", c.name)
		}
	}
}

// TestLatestFrontInputRequests: an upstream at 2026-07-28 that asks for
// input (SEP-2322). The byte path's answer to a 2026-07-28 caller is the
// go-sdk path's, byte for byte but for the sealed requestState (each
// gateway seals its own, at random): the input requests, resultType
// input_required, for a caller that announced elicitation; the error that
// says why for one that did not. The retry (inputResponses,
// requestState) goes to the go-sdk, and completes the call.
func TestLatestFrontInputRequests(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "mrtr", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "confirm", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult); ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "action=" + r.Action}}}, nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Proceed?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}}},
			RequestState: "state-1",
		}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	gw := func(bytePath bool) (*Gateway, string) {
		dir := t.TempDir()
		yml := fmt.Sprintf("listen: 127.0.0.1:0\nhttp: {bytePath: %v}\nstore: sqlite:%s\nupstreamProtocol: auto\nservers:\n  up:\n    type: streamable-http\n    url: %s/mcp\n    prefix: \"\"\n",
			bytePath, filepath.Join(dir, "gh.db"), up.URL)
		return serveGateway(t, yml, dir)
	}
	gb, bytesURL := gw(true)
	_, sdkURL := gw(false)
	sealed := regexp.MustCompile(`"requestState":"ghs1\.[^"]*"`)
	elicit := strings.Replace(latestCall(1, "confirm", "{}", ""), `{"roots":{"listChanged":true}}`, `{"elicitation":{"form":{}}}`, 1)
	for _, c := range []struct{ name, body string }{
		{"announced", elicit},
		{"not announced", latestCall(2, "confirm", "{}", "")},
	} {
		n := len(loggedCalls(t, gb))
		q := latestReq{body: c.body}
		s1, h1, b1 := q.send(t, bytesURL)
		s2, h2, b2 := q.send(t, sdkURL)
		m1, m2 := sealed.ReplaceAll(b1, []byte(`"requestState":"SEALED"`)), sealed.ReplaceAll(b2, []byte(`"requestState":"SEALED"`))
		if s1 != s2 || h1 != h2 || !bytes.Equal(m1, m2) {
			t.Errorf("%s: byte path and go-sdk path differ:\nbytes: %d %s %q\nsdk:   %d %s %q", c.name, s1, h1, b1, s2, h2, b2)
		}
		if got := fronts(t, gb, n); fmt.Sprint(got) != "[bytes]" {
			t.Errorf("%s: served by %v", c.name, got)
		}
		if c.name == "announced" {
			if !bytes.Contains(b1, []byte(`"resultType":"input_required"`)) || !sealed.Match(b1) {
				t.Fatalf("announced: %q", b1)
			}
			// The retry, with the byte path's sealed state: the go-sdk reads
			// it (a retry is not the byte path's), and the call completes.
			state := strings.TrimPrefix(string(sealed.Find(b1)), `"requestState":`)
			retry := strings.Replace(elicit, `"arguments":{}`, `"arguments":{},"inputResponses":{"q":{"action":"accept","content":{"answer":"yes"}}},"requestState":`+state, 1)
			n := len(loggedCalls(t, gb))
			status, _, body := latestReq{body: retry}.send(t, bytesURL)
			if status != http.StatusOK || !bytes.Contains(body, []byte("action=accept")) {
				t.Fatalf("retry: %d %q", status, body)
			}
			if got := fronts(t, gb, n); fmt.Sprint(got) != "[sdk]" {
				t.Errorf("retry: served by %v", got)
			}
		}
	}
}

// TestLatestFrontRateLimit: the rate limit counts the byte path's calls as
// the go-sdk path's, and its refusal is answered alike.
func TestLatestFrontRateLimit(t *testing.T) {
	up, _ := latestUpstream(t)
	gb, bytesURL := latestGateway(t, up, "rateLimit: {maxCalls: 2, window: 1h}", true)
	_, sdkURL := latestGateway(t, up, "rateLimit: {maxCalls: 2, window: 1h}", false)
	// The time to wait is the only difference (the two limits began a
	// moment apart).
	wait := regexp.MustCompile(`retry in [0-9hms.]+|"retryAfterMs":[0-9]+`)
	for i := range 3 {
		q := latestReq{token: "alice-token", body: latestCall(i, "echo", "", "")}
		s1, h1, b1 := q.send(t, bytesURL)
		s2, h2, b2 := q.send(t, sdkURL)
		b1, b2 = wait.ReplaceAll(b1, []byte("WAIT")), wait.ReplaceAll(b2, []byte("WAIT"))
		if s1 != s2 || h1 != h2 || !bytes.Equal(b1, b2) {
			t.Errorf("call %d: byte path and go-sdk path differ:\nbytes: %d %s %q\nsdk:   %d %s %q", i, s1, h1, b1, s2, h2, b2)
		}
		if i == 2 && !bytes.Contains(b1, []byte("rate")) {
			t.Errorf("the third call was not refused: %q", b1)
		}
	}
	if got := fronts(t, gb, 0); fmt.Sprint(got) != "[bytes bytes bytes]" {
		t.Errorf("served by %v", got)
	}
}

// TestLatestFrontEncodeFromTemplates: the answers the latest front encodes
// from a result value (the go-sdk's client carried the call: a stdio
// server, or no byte sender) carry the resultType the go-sdk's decoding set
// in the template, input_required for a result that asks for input, and
// nothing of an earlier answer: each answer copies the template, and
// neither the template nor a result's _meta is written to.
func TestLatestFrontEncodeFromTemplates(t *testing.T) {
	p := newLatestFront(&Gateway{impl: &mcp.Implementation{Name: "gatehouse", Version: "t"}})
	meta := mcp.Meta{"k": "v"}
	first, err := p.encode([]byte(`1`), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "first"}}, IsError: true, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":1`, `"resultType":"complete"`, `"first"`, `"isError":true`, `"k":"v"`, `"io.modelcontextprotocol/serverInfo":{"name":"gatehouse","version":"t"}`} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("first answer %s: no %s", first, want)
		}
	}
	if len(meta) != 1 {
		t.Errorf("the result's _meta was written to: %v", meta)
	}
	ask, err := p.encode([]byte(`2`), &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Proceed?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ask, []byte(`"resultType":"input_required"`)) || bytes.Contains(ask, []byte(`"complete"`)) {
		t.Errorf("an answer asking for input: %s", ask)
	}
	second, err := p.encode([]byte(`3`), &mcp.CallToolResult{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(second, []byte(`"resultType":"complete"`)) || !bytes.Contains(second, []byte(`"content":[]`)) ||
		bytes.Contains(second, []byte("first")) || bytes.Contains(second, []byte("isError")) || bytes.Contains(second, []byte(`"k"`)) {
		t.Errorf("an empty result after others: %s", second)
	}
	if len(p.complete.Content) != 0 || len(p.complete.Meta) != 0 || p.complete.IsError || len(p.inputRequired.InputRequests) != 0 || len(p.inputRequired.Meta) != 0 {
		t.Errorf("a template was written to: %+v / %+v", p.complete, p.inputRequired)
	}
}
