package fantasy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openai"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/agentcrash"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// envRole selects what a re-executed test binary does.
const envRole = "FANTASY_TEST_ROLE"

func TestMain(m *testing.M) {
	agentcrash.Main(crashAgent) // returns unless this process is a crash test's child
	switch os.Getenv(envRole) {
	case "effectserver":
		if err := effectserver.Main(nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// legal is the tool name rule of OpenAI's API (and Anthropic's).
var legal = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// effectServer is the effect server as a stdio MCP server: this test
// binary re-executed.
func effectServer(t testing.TB, file string) toolset.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return toolset.Server{Config: plugin.ServerConfig{Name: "pay", Type: plugin.TransportStdio, Command: exe,
		Env: map[string]string{envRole: "effectserver", effectserver.EnvFile: file}}}
}

// openToolset opens a toolset over the effect server, its effects counted
// in a file under t's temporary directory.
func openToolset(t testing.TB) (*toolset.Toolset, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "effects")
	ts, err := toolset.Open(ctxT(t), []toolset.Server{effectServer(t, file)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts, file
}

func toolsOf(t testing.TB, ts *toolset.Toolset) []loop.Tool {
	t.Helper()
	tools, err := loop.ToolsetTools(ctxT(t), ts)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// effects returns the number of effects recorded under each idempotency key.
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

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// openStore opens a SQLite store at path (a fresh process's view of it).
func openStore(t testing.TB, path string) store.Store {
	t.Helper()
	s, err := sqlite.Open(ctxT(t), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newJournal(t testing.TB, s store.Store) *durable.Journal {
	t.Helper()
	j, err := durable.NewJournal(s, &durable.JournalOptions{Approvals: s})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// languageModel is fantasy's OpenAI provider (Chat Completions) pointed
// at the local wire server.
func languageModel(t testing.TB, srv *fantasytest.Server) fantasy.LanguageModel {
	t.Helper()
	lm, err := newLanguageModel(ctxT(t), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return lm
}

func newLanguageModel(ctx context.Context, url string) (fantasy.LanguageModel, error) {
	p, err := openai.New(openai.WithBaseURL(url), openai.WithAPIKey("test-key"))
	if err != nil {
		return nil, err
	}
	return p.LanguageModel(ctx, "gpt-test")
}

func wireServer(t testing.TB, replies ...fantasytest.Reply) *fantasytest.Server {
	srv := fantasytest.NewServer(replies...)
	t.Cleanup(srv.Close)
	return srv
}

// request decodes the i-th request the wire server received.
func request(t testing.TB, srv *fantasytest.Server, i int) fantasytest.Request {
	t.Helper()
	bodies := srv.Bodies()
	if i >= len(bodies) {
		t.Fatalf("request %d of %d", i, len(bodies))
	}
	r, err := fantasytest.ParseRequest(bodies[i])
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
