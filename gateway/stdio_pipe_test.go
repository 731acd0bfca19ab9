package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
)

// linkSelf puts this test binary in dir as name (a stdio server's command
// is bare or inside the config's directory) and returns its path.
func linkSelf(t *testing.T, dir, name string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.Link(exe, p); err != nil {
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// stdioRun is what one run of TestStdioParity showed.
type stdioRun struct {
	Answers []string
	Effects map[string]int // effects counted by the server, by key
	Journal []string
	Senders []string
}

var receipts = regexp.MustCompile(`rcpt_[0-9a-f]{12}`)

// runStdio makes the scenario's calls through a gateway in front of the
// effect server as a stdio child, with the byte path on or off.
func runStdio(t *testing.T, bytePath bool) stdioRun {
	dir := t.TempDir()
	linkSelf(t, dir, "fx")
	effects := filepath.Join(dir, "effects")
	yml := fmt.Sprintf(`listen: 127.0.0.1:0
store: sqlite:%s
http: {bytePath: %v}
servers:
  fx:
    type: stdio
    command: ./fx
    env: {%s: "1", %s: %q}
    prefix: ""
`, filepath.Join(dir, "gh.db"), bytePath, effectChildEnv, effectserver.EnvFile, effects)
	g, url := serveGateway(t, yml, dir)
	cs := session(t, url, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var run stdioRun
	call := func(tool string, args map[string]any, key string) string {
		p := &mcp.CallToolParams{Name: tool, Arguments: args}
		if key != "" {
			p.Meta = mcp.Meta{"idempotencyKey": key}
		}
		a := answer(cs.CallTool(ctx, p))
		run.Answers = append(run.Answers, receipts.ReplaceAllString(a, "rcpt_R"))
		return a
	}
	call("echo", map[string]any{"text": "hi"}, "")
	first := call("charge", map[string]any{"amount": 5}, "k1")
	if again := call("charge", map[string]any{"amount": 5}, "k1"); again != first || !receipts.MatchString(first) {
		t.Errorf("a keyed call's replay answered\n%s\nafter\n%s", again, first)
	}
	call("charge", map[string]any{"amount": 7}, "")
	call("reject", map[string]any{"amount": 1}, "k2")
	call("fail_result", map[string]any{"amount": 1}, "k3")

	// Arguments the caller spread over lines (JSON whitespace) go to the
	// server on one line: its stdio framing holds.
	msg := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{
  "text": "a\nb",
  "n": [1,
        2]
}}}`
	status, _, body := post(t, url, cs, "", msg)
	if status != 200 {
		t.Fatalf("the call with arguments over lines: HTTP %d %s", status, body)
	}
	res := sseResult(t, body)
	run.Answers = append(run.Answers, res)

	// A server that exits during a call: the call fails (it was sent again
	// once, on a new child, which exits too); the next call gets a new
	// child and its answer.
	call("exit", nil, "")
	for {
		// The gateway restarts the server after a pause.
		a := answer(cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after exit"}}))
		if !strings.Contains(a, `"code":"unavailable"`) || ctx.Err() != nil {
			run.Answers = append(run.Answers, a)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	call("echo", map[string]any{"text": "again"}, "")

	e, _, err := effectserver.Effects(effects)
	if err != nil {
		t.Fatal(err)
	}
	run.Effects = map[string]int{}
	for k, r := range e {
		run.Effects[k] = len(r)
	}
	for _, c := range loggedCalls(t, g) {
		run.Senders = append(run.Senders, c.Tool+":"+c.Sender)
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		tool := map[string]string{"k1": "charge", "k2": "reject", "k3": "fail_result"}[k]
		runID, callID := unitOfWork(server.Subject(subjectOf(t, g, tool)), tool, k)
		r, err := g.Store().GetRecord(ctx, store.RecordKey{Scope: journalScope, RunID: runID, ToolCallID: callID})
		row := "none"
		if err == nil {
			row = string(r.State)
		}
		run.Journal = append(run.Journal, k+": "+row)
	}
	return run
}

// subjectOf is the subject the gateway logged for a call of tool.
func subjectOf(t *testing.T, g *Gateway, tool string) string {
	for _, c := range loggedCalls(t, g) {
		if c.Tool == tool {
			return c.Subject
		}
	}
	t.Fatalf("no call of %s was logged", tool)
	return ""
}

// sseResult returns the result (or error) of the one JSON-RPC answer in an
// SSE or JSON body, as JSON.
func sseResult(t *testing.T, body []byte) string {
	t.Helper()
	data := body
	if m := regexp.MustCompile(`(?m)^data: (.*)$`).FindSubmatch(body); m != nil {
		data = m[1]
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	if msg.Error != nil {
		return "error " + string(msg.Error)
	}
	return string(msg.Result)
}

// TestStdioParity: a stdio server (a real child process: the effect
// server) through the gateway with the byte path on, where the byte sender
// writes the calls on the server's Pipe, and off, where the go-sdk's
// client carries them: the same answers (a result, a replayed keyed call,
// a JSON-RPC error, a tool error, arguments the caller spread over lines,
// a server that exits mid-call and the call after it), the same effects
// counted by the server, the same journal rows; and every call that was
// sent went by the mode's sender.
func TestStdioParity(t *testing.T) {
	on := runStdio(t, true)
	off := runStdio(t, false)
	for i := range max(len(on.Answers), len(off.Answers)) {
		var a, b string
		if i < len(on.Answers) {
			a = on.Answers[i]
		}
		if i < len(off.Answers) {
			b = off.Answers[i]
		}
		if a != b {
			t.Errorf("answer %d:\n bytes %s\n sdk   %s", i, a, b)
		}
	}
	if !reflect.DeepEqual(on.Effects, off.Effects) || !reflect.DeepEqual(on.Journal, off.Journal) {
		t.Errorf("effects %v / %v, journal %v / %v (bytes / sdk)", on.Effects, off.Effects, on.Journal, off.Journal)
	}
	// What the outcome is, so that agreement is not agreement on nothing.
	// One effect without a key, one for k1 (under the key the gateway
	// derives from it), however often k1 was called.
	if len(on.Effects) != 2 || on.Effects[""] != 1 {
		t.Errorf("effects %v, want one without a key and one keyed", on.Effects)
	}
	for k, n := range on.Effects {
		if n != 1 {
			t.Errorf("key %q: %d effects", k, n)
		}
	}
	if want := []string{"k1: succeeded", "k2: failed", "k3: failed"}; !slices.Equal(on.Journal, want) {
		t.Errorf("journal %v, want %v", on.Journal, want)
	}
	if want := `{"content":[{"type":"text","text":"{\"text\":\"a\\nb\",\"n\":[1,2]}"}]}`; on.Answers[6] != want {
		t.Errorf("arguments over lines reached the server as %s, want %s", on.Answers[6], want)
	}
	if on.Answers[7] == "error" || !regexp.MustCompile(`^rpc |"isError":true`).MatchString(on.Answers[7]) {
		t.Errorf("the call whose server exited answered %s", on.Answers[7])
	}
	if want := `{"content":[{"type":"text","text":"{\"text\":\"after exit\"}"}]}`; on.Answers[8] != want {
		t.Errorf("the call after the exit answered %s", on.Answers[8])
	}
	// Every call sent went by the mode's sender, but for the first after
	// the restart (a new session's first call judges it through the
	// go-sdk's client); the one after that by the mode's sender again.
	for mode, r := range map[string]stdioRun{"bytes": on, "sdk": off} {
		var sent []string
		for _, s := range r.Senders {
			if _, sender, _ := strings.Cut(s, ":"); sender != "" {
				sent = append(sent, s)
			}
		}
		want := []string{"echo", "charge", "charge", "reject", "fail_result", "echo", "exit", "echo", "echo"}
		for i := range want {
			want[i] += ":" + mode
		}
		want[7] = "echo:sdk"
		if !slices.Equal(sent, want) {
			t.Errorf("with the byte path %s the calls sent went by\n%v, want\n%v", mode, sent, want)
		}
	}
}
