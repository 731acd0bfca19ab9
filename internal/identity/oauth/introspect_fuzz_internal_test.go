package oauth

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseIntrospection: no answer panics the parser, and every answer it
// accepts is, read by encoding/json on its own, an object whose active is
// true and whose sub is the non-empty string the parser returned, with an
// exp; every refusal is typed.
func FuzzParseIntrospection(f *testing.F) {
	f.Add([]byte(`{"active":true,"sub":"alice","exp":1893553445,"scope":"mcp tool:echo","aud":["https://gw/mcp"],"iss":"https://as"}`))
	f.Add([]byte(`{"active":false}`))
	f.Add([]byte(`{"active":"true","sub":"a","exp":1}`))
	f.Add([]byte(`{"active":true,"sub":"a","exp":1.5e9,"nbf":null,"aud":"x"}`))
	f.Add([]byte(`{"active":true,"sub":"a","exp":-1}`))
	f.Add([]byte(`{"active":true,"active":false,"sub":"a","exp":1}`))
	f.Add([]byte(` [] `))
	f.Fuzz(func(t *testing.T, body []byte) {
		ans, e := parseIntrospection(body)
		if e != nil {
			if e.Reason != ReasonInactive && e.Reason != ReasonIntrospection && e.Reason != ReasonMalformed {
				t.Fatalf("refusal with reason %v", e.Reason)
			}
			return
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("accepted what encoding/json refuses: %v", err)
		}
		if m["active"] != true || m["sub"] != ans.sub || ans.sub == "" || ans.exp.IsZero() {
			t.Fatalf("accepted %v as %+v", m, ans)
		}
		for _, s := range ans.scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n") {
				t.Fatalf("scope %q", s)
			}
		}
	})
}
