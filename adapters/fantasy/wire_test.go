package fantasy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"

	"charm.land/fantasy"

	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// TestAgentStreamsParallelTools: fantasy's agent streaming (the
// chat.completion.chunk events of fantasytest) dispatches the adapter's
// tools, which say they may run in parallel; both calls are journaled
// under their IDs and the next request carries both results.
func TestAgentStreamsParallelTools(t *testing.T) {
	ts, file := agentcrash.OpenToolset(t)
	srv := wireServer(t,
		fantasytest.Reply{Calls: []fantasytest.Call{
			{ID: "p1", Name: "pay__charge", Args: `{"amount":1}`},
			{ID: "p2", Name: "pay__charge", Args: `{"amount":2}`},
		}},
		fantasytest.Reply{Text: "Charged twice."},
	)
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "st-1", Journal: agentcrash.NewJournal(t, memStore(t)), Tools: agentcrash.Tools(t, ts)})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ghfantasy.Tools(ex)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fantasy.NewAgent(languageModel(t, srv), fantasy.WithTools(tools...)).Stream(agentcrash.Ctx(t), fantasy.AgentStreamCall{Prompt: "Charge."})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if res.Response.Content.Text() != "Charged twice." || srv.Requests() != 2 || !request(t, srv, 0).Stream {
		t.Fatalf("result %+v after %d requests", res.Response, srv.Requests())
	}
	if e := agentcrash.EffectsOf(t, file); e["st-1:p1"] != 1 || e["st-1:p2"] != 1 || agentcrash.Total(e) != 2 {
		t.Fatalf("effects %v", e)
	}
	r := request(t, srv, 1)
	got := map[string]string{}
	for _, m := range r.Messages {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Text()
		}
	}
	if !strings.Contains(got["p1"], "charged 1 for st-1:p1") || !strings.Contains(got["p2"], "charged 2 for st-1:p2") {
		t.Fatalf("tool messages: %v", got)
	}
}

// TestWireServerRefusesBadNames: fantasytest answers 400 with an OpenAI
// error object for a tool name the API refuses and for a tool message
// answering no call.
func TestWireServerRefusesBadNames(t *testing.T) {
	srv := wireServer(t, fantasytest.Reply{Text: "hi"})
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"has space"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"c9","content":"r"}]}`,
	} {
		resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request_error"`) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
}

// TestAgentsShareTools: two fantasy agents running at once with the same
// AgentTools (fantasy normalizes each tool's schema in place: a type list
// becomes an anyOf); under -race, a shared schema map is a data race.
func TestAgentsShareTools(t *testing.T) {
	ts, _ := agentcrash.OpenToolset(t)
	tl := agentcrash.Tools(t, ts)
	for i := range tl {
		if tl[i].Name == "pay__echo" {
			tl[i].InputSchema = []byte(`{"type":"object","properties":{"v":{"type":["string","null"]},"l":{"type":"array"}}}`)
		}
	}
	ex, err := loop.NewExecutor(loop.ExecutorOptions{RunID: "share", Journal: agentcrash.NewJournal(t, memStore(t)), Tools: tl})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ghfantasy.Tools(ex)
	if err != nil {
		t.Fatal(err)
	}
	srv := wireServer(t, fantasytest.Reply{Text: "ok"})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := fantasy.NewAgent(languageModel(t, srv), fantasy.WithTools(tools...)).Generate(agentcrash.Ctx(t), fantasy.AgentCall{Prompt: "hi"})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range tools {
		if tool.Info().Name == "pay__echo" {
			if v, _ := tool.Info().Parameters["v"].(map[string]any); v["anyOf"] != nil {
				t.Fatalf("the tool's own schema was changed: %v", v)
			}
		}
	}
}

// TestFunctionToolNumbersOnTheWire: numbers of a function tool's schema
// reach the wire as numbers, exactly (openai-go writes a json.Number as a
// string): an integer, a fraction, an integer past int64 and one past
// float64.
func TestFunctionToolNumbersOnTheWire(t *testing.T) {
	srv := wireServer(t, fantasytest.Reply{Text: "ok"})
	schema := `{"type":"object","properties":{"n":{"type":"integer","minimum":3,"multipleOf":0.25,"default":123456789012345678901234567890,"maximum":1e999}}}`
	m := ghfantasy.NewModel(languageModel(t, srv), nil)
	if _, err := m.Turn(agentcrash.Ctx(t), loop.ModelRequest{Messages: []loop.Message{{Role: loop.RoleUser, Content: "go"}},
		Tools: []loop.ToolDef{{Name: "t", InputSchema: []byte(schema)}}}); err != nil {
		t.Fatal(err)
	}
	got := string(request(t, srv, 0).Tools[0].Function.Parameters)
	for _, want := range []string{`"minimum":3`, `"multipleOf":0.25`, `"default":123456789012345678901234567890`, `"maximum":1e999`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s not on the wire: %s", want, got)
		}
	}
}
