package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/postgres"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// envRole makes the test binary an effect server (a stdio subprocess).
const envRole = "ANTHROPIC_ADAPTER_TEST_ROLE"

func TestMain(m *testing.M) {
	agentcrash.Main(crashAgent) // returns unless this process is the crash test's child
	if os.Getenv(envRole) == "effectserver" {
		if err := effectserver.Main(nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		// The SDK's HTTP client keeps idle keep-alive connections.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// effects runs the effect server as a stdio subprocess behind a toolset
// (tools "effects__charge", "effects__fail_result", ...) and returns the
// toolset's tools and the effect file.
func effects(t testing.TB) ([]loop.Tool, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "effects")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.Open(ctxT(t), []toolset.Server{{Config: plugin.ServerConfig{
		Name: "effects", Type: plugin.TransportStdio, Command: exe,
		Env: map[string]string{envRole: "effectserver", effectserver.EnvFile: file},
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	tools, err := loop.ToolsetTools(ctxT(t), ts)
	if err != nil {
		t.Fatal(err)
	}
	return tools, file
}

// effectCount returns how many effects ran under each idempotency key.
func effectCount(t testing.TB, file string) map[string]int {
	t.Helper()
	e, _, err := effectserver.Effects(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for k, v := range e {
		out[k] = len(v)
	}
	return out
}

// openStore opens a SQLite store at path (a fresh process's view).
func openStore(t testing.TB, path string) store.Store {
	t.Helper()
	s, err := sqlite.Open(ctxT(t), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storeOpener returns a function that opens one store of that kind, as a
// fresh process would (PostgreSQL: a schema of its own for the test,
// skipped when $GATEHOUSE_TEST_POSTGRES is unset).
func storeOpener(t *testing.T, kind string) func(t *testing.T) store.Store {
	if kind == "sqlite" {
		path := filepath.Join(t.TempDir(), "gh.db")
		return func(t *testing.T) store.Store { return openStore(t, path) }
	}
	if kind != "postgres" {
		t.Fatalf("unknown store %q", kind)
	}
	dsn := pgtest.Schema(t, "adanthropic", "the adapter's resume test on PostgreSQL")
	return func(t *testing.T) store.Store {
		s, err := postgres.Open(ctxT(t), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func newJournal(t testing.TB, s store.Store) *durable.Journal {
	t.Helper()
	j, err := durable.NewJournal(s, &durable.JournalOptions{Approvals: s, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// wire starts the local Messages API and returns it with an SDK client
// pointed at it.
func wire(t testing.TB, replies ...anthropictest.Reply) (*anthropictest.Server, *sdk.Client) {
	t.Helper()
	srv := anthropictest.NewServer(replies...)
	t.Cleanup(srv.Close)
	c := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test-key"),
		option.WithMaxRetries(0), option.WithoutOpenTelemetry())
	return srv, &c
}

// oddServer is a real MCP server (streamable HTTP on 127.0.0.1) whose
// tools have names no provider accepts as they are and a schema with
// $defs, oneOf and nested objects.
func oddServer(t testing.TB) []loop.Tool {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "odd", Version: "1"}, nil)
	answer := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok " + req.Params.Name}}}, nil
	}
	long := "a_tool_name_that_goes_on_and_on_past_what_any_provider_takes_for_a_function_name_" + "x"
	for _, name := range []string{"get.weather/v2 (beta)", long, "résumé:parse", "ok_name"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "odd tool " + name, InputSchema: json.RawMessage(richSchema)}, answer)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	ts, err := toolset.Open(ctxT(t), []toolset.Server{{Config: plugin.ServerConfig{
		Name: "odd server!", Type: plugin.TransportStreamableHTTP, URL: hs.URL,
	}}}, &toolset.Options{AllowedHosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	tools, err := loop.ToolsetTools(ctxT(t), ts)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

const richSchema = `{
  "type": "object",
  "$defs": {"place": {"type": "object", "properties": {"city": {"type": "string"}, "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}}}},
  "properties": {
    "where": {"$ref": "#/$defs/place"},
    "unit": {"oneOf": [{"const": "c"}, {"const": "f"}]},
    "days": {"type": "integer", "minimum": 1}
  },
  "required": ["where"],
  "additionalProperties": false
}`
