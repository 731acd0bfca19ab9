package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// envRole selects what a re-executed test binary does.
const envRole = "ADAPTER_OPENAI_TEST_ROLE"

func TestMain(m *testing.M) {
	agentcrash.Main(func(ctx context.Context, env *agentcrash.Env) error {
		_, err := crashAgent(ctx, env)
		return err
	})
	if os.Getenv(envRole) == "effectserver" {
		if err := effectserver.Main(nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// legalName is the name rule of OpenAI's function tools.
var legalName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// effectServerConfig is the effect server as a stdio subprocess: this
// test binary re-executed.
func effectServerConfig(name, file string) plugin.ServerConfig {
	return plugin.ServerConfig{Name: name, Type: plugin.TransportStdio, Command: os.Args[0],
		Env: map[string]string{envRole: "effectserver", effectserver.EnvFile: file}}
}

// openEffects opens a toolset over the effect server (tools "pay__charge",
// "pay__charge_once", "pay__reject", "pay__fail_result", "pay__echo") and
// returns it with the effect file.
func openEffects(t testing.TB, opts *toolset.Options) (*toolset.Toolset, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "effects")
	ts, err := toolset.Open(ctxT(t), []toolset.Server{{Config: effectServerConfig("pay", file)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts, file
}

func toolsetTools(t testing.TB, ts *toolset.Toolset) []loop.Tool {
	t.Helper()
	tools, err := loop.ToolsetTools(ctxT(t), ts)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// effects returns how many effects the server ran per idempotency key.
func effects(t testing.TB, file string) map[string]int {
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

// sqliteStore opens a store on a real SQLite file.
func sqliteStore(t testing.TB, path string) store.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "gatehouse.db")
	}
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newJournal(t testing.TB, s store.Store) *durable.Journal {
	t.Helper()
	j, err := durable.NewJournal(s, &durable.JournalOptions{Approvals: s, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// client is the real SDK client pointed at the wire server.
func client(srv *openaitest.Server) oai.Client { return clientAt(srv.URL) }

// clientAt is the real SDK client pointed at a wire server's URL.
func clientAt(url string) oai.Client {
	return oai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

// body decodes a raw request body.
func body(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// toolNames returns the names of the function tools of a request body
// (either API).
func toolNames(t testing.TB, b []byte) []string {
	t.Helper()
	var names []string
	for _, x := range body(t, b)["tools"].([]any) {
		tool := x.(map[string]any)
		if f, ok := tool["function"].(map[string]any); ok {
			names = append(names, f["name"].(string))
		} else if tool["type"] == "function" {
			names = append(names, tool["name"].(string))
		}
	}
	return names
}
