package gateway

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/internal/fixture/effectserver"
)

func TestMain(m *testing.M) {
	if os.Getenv(effectChildEnv) == "1" {
		os.Exit(effectChild())
	}
	goleak.VerifyTestMain(m)
}

// effectChildEnv, set in a stdio server entry's env, makes the test binary
// a stdio MCP server: the effect server (internal/fixture/effectserver, its
// effect file in $EFFECTSERVER_FILE) with one more tool, "exit", which ends
// the process without an answer.
const effectChildEnv = "GH_GATEWAY_TEST_EFFECT_CHILD"

func effectChild() int {
	s := effectserver.New(effectserver.Options{File: os.Getenv(effectserver.EnvFile)})
	s.AddTool(&mcp.Tool{Name: "exit", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(0)
		return nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "effect child:", err)
		return 1
	}
	return 0
}

// staticAuthenticator is bearer.NewAuthenticator for a config without auth.oauth
// (which cannot fail).
func staticAuthenticator(a *config.Auth) *bearer.Authenticator {
	au, err := bearer.NewAuthenticator(a, nil, time.Now)
	if err != nil {
		panic(err)
	}
	return au
}
