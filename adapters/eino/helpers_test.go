package eino_test

import (
	"encoding/json"
	"testing"

	"github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/model"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
	"github.com/gatehouse-dev/gatehouse/adapters/internal/agentcrash"
)

func TestMain(m *testing.M) {
	agentcrash.Main(crashAgent) // returns unless this process is a child (the crash's agent, the effect server)
	goleak.VerifyTestMain(m)
}

// chatModel is eino-ext's OpenAI chat model (a real eino
// model.ToolCallingChatModel) pointed at the local wire server.
func chatModel(t testing.TB, srv *einotest.Server) model.ToolCallingChatModel {
	t.Helper()
	cm, err := openai.NewChatModel(agentcrash.Ctx(t), &openai.ChatModelConfig{BaseURL: srv.URL, APIKey: "test-key", Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func wireServer(t testing.TB, replies ...einotest.Reply) *einotest.Server {
	srv := einotest.NewServer(replies...)
	t.Cleanup(srv.Close)
	return srv
}

// request decodes the i-th request the wire server received.
func request(t testing.TB, srv *einotest.Server, i int) einotest.Request {
	t.Helper()
	bodies := srv.Bodies()
	if i >= len(bodies) {
		t.Fatalf("request %d of %d", i, len(bodies))
	}
	r, err := einotest.ParseRequest(bodies[i])
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
