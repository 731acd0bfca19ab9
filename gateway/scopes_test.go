package gateway

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/scopes"
	"github.com/gatehouse-dev/gatehouse/server"
)

// TestScopeKinds: tool and skill scopes are read per kind. A static token
// sees what its list names (absent: everything; a list without a kind:
// nothing of it); an OAuth token with no scope of a kind sees everything
// of that kind.
func TestScopeKinds(t *testing.T) {
	au := staticAuthenticator(&config.Auth{Tokens: []config.Token{
		{SHA256: hashOf("a"), Subject: "all"},
		{SHA256: hashOf("t"), Subject: "tools", Scopes: []string{"tool:*"}},
		{SHA256: hashOf("s"), Subject: "skill", Scopes: []string{"tool:x__y", "skill:acme__triage"}},
		{SHA256: hashOf("k"), Subject: "skills", Scopes: []string{"skill:*"}},
	}})
	static := server.RequestInfo{}
	oauth := func(sc ...string) server.RequestInfo {
		return server.RequestInfo{TokenInfo: &auth.TokenInfo{UserID: "iss#sub", Scopes: sc,
			Extra: map[string]any{bearer.ScopesKey: scopes.Parse(sc, true)}}}
	}
	for _, c := range []struct {
		name        string
		subject     string
		info        server.RequestInfo
		tool, skill bool // may see x__y, acme__triage
	}{
		{"static without scopes", "all", static, true, true},
		{"static tool:*", "tools", static, true, false},
		{"static tool and skill", "skill", static, true, true},
		{"static skill:*", "skills", static, false, true},
		{"static unknown subject", "nobody", static, false, false},
		{"oauth without kinds", "iss#sub", oauth("mcp"), true, true},
		{"oauth tool only", "iss#sub", oauth("mcp", "tool:other"), false, true},
		{"oauth skill only", "iss#sub", oauth("mcp", "skill:other"), true, false},
		{"oauth both", "iss#sub", oauth("tool:x__y", "skill:acme__triage"), true, true},
		{"oauth empty names", "iss#sub", oauth("tool:", "skill:"), true, true}, // name nothing: as before
		{"oauth tool: beside a tool", "iss#sub", oauth("tool:", "tool:q"), false, true},
		{"oauth skills stars", "iss#sub", oauth("skill:*", "tool:z"), false, true},
	} {
		if got := au.Allows(c.subject, c.info.TokenInfo, "x__y"); got != c.tool {
			t.Errorf("%s: tool visible = %v, want %v", c.name, got, c.tool)
		}
		if got := au.AllowsSkill(c.subject, c.info.TokenInfo, "acme__triage"); got != c.skill {
			t.Errorf("%s: skill visible = %v, want %v", c.name, got, c.skill)
		}
	}
	off := staticAuthenticator(nil)
	if !off.Allows("local", static.TokenInfo, "x") || !off.AllowsSkill("local", static.TokenInfo, "x") {
		t.Error("without auth everything is visible")
	}
}
