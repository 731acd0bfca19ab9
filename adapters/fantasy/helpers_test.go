package fantasy_test

import (
	"context"
	"encoding/json"
	"testing"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openai"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/adapters/fantasy/fantasytest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
)

func TestMain(m *testing.M) {
	agentcrash.Main(crashAgent) // returns unless this process is a child (the crash's agent, the effect server)
	goleak.VerifyTestMain(m)
}

// languageModel is fantasy's OpenAI provider (Chat Completions) pointed
// at the local wire server.
func languageModel(t testing.TB, srv *fantasytest.Server) fantasy.LanguageModel {
	t.Helper()
	lm, err := newLanguageModel(agentcrash.Ctx(t), srv.URL)
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
