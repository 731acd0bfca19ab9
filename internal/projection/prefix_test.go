package projection

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
)

func strp(s string) *string { return &s }

// Hex digits computed outside Go: sha256(b"https://a.example/mcp")[:4] =
// 42c16f3b, sha256(b"node\x00server.js")[:4] = 74a6f4f5.
const (
	idHTTP  = "https://a.example/mcp"
	idStdio = "node\x00server.js"
)

func TestSuffixedPrefix(t *testing.T) {
	if got := SuffixedPrefix("local", idHTTP); got != "local_42c16f3b" {
		t.Errorf("got %q", got)
	}
	if got := SuffixedPrefix("local", idStdio); got != "local_74a6f4f5" {
		t.Errorf("got %q", got)
	}
}

func prefixMap(t *testing.T, servers []ServerRef) (map[string]string, []diag.Diagnostic) {
	t.Helper()
	ps, ds := Prefixes(servers)
	if len(ps) != len(servers) {
		t.Fatalf("got %d prefixes for %d servers", len(ps), len(servers))
	}
	m := map[string]string{}
	for i, s := range servers {
		m[s.Name+"|"+s.Identity] = ps[i]
	}
	return m, ds
}

func TestPrefixesCollisionBothOrders(t *testing.T) {
	a := ServerRef{Name: "local", Identity: idHTTP}
	b := ServerRef{Name: "local", Identity: idStdio}
	want := map[string]string{
		"local|" + idHTTP:  "local_42c16f3b",
		"local|" + idStdio: "local_74a6f4f5",
	}
	m1, d1 := prefixMap(t, []ServerRef{a, b})
	m2, d2 := prefixMap(t, []ServerRef{b, a})
	if !reflect.DeepEqual(m1, want) || !reflect.DeepEqual(m2, want) {
		t.Fatalf("prefixes: order a,b %v; order b,a %v; want %v", m1, m2, want)
	}
	if !reflect.DeepEqual(d1, d2) {
		t.Fatalf("diagnostics depend on order:\n%v\n%v", d1, d2)
	}
	if len(d1) != 1 {
		t.Fatalf("want one diagnostic, got %v", d1)
	}
	d := d1[0]
	if d.Rule != diag.ServerNameCollision || d.Origin != "local" || d.Section != "" {
		t.Fatalf("diagnostic %+v", d)
	}
	for _, s := range []string{`"local_42c16f3b"`, `"local_74a6f4f5"`, "2 servers"} {
		if !strings.Contains(d.Message, s) {
			t.Errorf("message %q does not contain %s", d.Message, s)
		}
	}
}

func TestPrefixesThirdServerRenamesNothing(t *testing.T) {
	base := []ServerRef{{Name: "local", Identity: idHTTP}, {Name: "local", Identity: idStdio}, {Name: "bank", Identity: "b"}}
	m1, d1 := prefixMap(t, base)
	m2, d2 := prefixMap(t, append([]ServerRef{{Name: "weather", Identity: "w"}}, base...))
	for k, v := range m1 {
		if m2[k] != v {
			t.Errorf("%s: %q became %q after adding a server", k, v, m2[k])
		}
	}
	if m2["weather|w"] != "weather" || m1["bank|b"] != "bank" {
		t.Errorf("unrelated servers suffixed: %v", m2)
	}
	if !reflect.DeepEqual(d1, d2) {
		t.Errorf("diagnostics changed: %v -> %v", d1, d2)
	}
	// Adding a server of the same name renames only the servers of that name.
	m3, d3 := prefixMap(t, append(base[2:3:3], ServerRef{Name: "bank", Identity: "b2"}))
	if m3["bank|b"] == "bank" || !strings.HasPrefix(m3["bank|b"], "bank_") || len(d3) != 1 {
		t.Errorf("bank collision: %v %v", m3, d3)
	}
}

func TestPrefixesExplicit(t *testing.T) {
	servers := []ServerRef{
		{Name: "local", Identity: idHTTP, Prefix: strp("")},
		{Name: "local", Identity: idStdio, Prefix: strp("x")},
		{Name: "solo", Identity: "s", Prefix: strp("custom")},
	}
	ps, ds := Prefixes(servers)
	if want := []string{"", "x", "custom"}; !reflect.DeepEqual(ps, want) {
		t.Fatalf("got %q, want %q", ps, want)
	}
	if len(ds) != 1 || ds[0].Rule != diag.ServerNameCollision {
		t.Fatalf("want one name collision diagnostic, got %v", ds)
	}
	// An explicit prefix next to a default one of the same name: the
	// default one is suffixed, the explicit one kept.
	ps, _ = Prefixes([]ServerRef{{Name: "local", Identity: idHTTP}, {Name: "local", Identity: idStdio, Prefix: strp("local")}})
	if want := []string{"local_42c16f3b", "local"}; !reflect.DeepEqual(ps, want) {
		t.Fatalf("got %q, want %q", ps, want)
	}
}

func TestPrefixesStillEqual(t *testing.T) {
	tests := []struct {
		name    string
		servers []ServerRef
	}{
		{"explicit equals a name", []ServerRef{{Name: "bank", Identity: "1"}, {Name: "other", Identity: "2", Prefix: strp("bank")}}},
		{"same name, same identity", []ServerRef{{Name: "dup", Identity: "same"}, {Name: "dup", Identity: "same"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, ds := Prefixes(tc.servers)
			if ps[0] != ps[1] {
				t.Fatalf("prefixes %q: expected equal", ps)
			}
			found := false
			for _, d := range ds {
				if d.Rule == diag.ServerNameCollision && strings.Contains(d.Message, "all use the prefix") {
					found = true
				}
			}
			if !found {
				t.Fatalf("no diagnostic for equal prefixes: %v", ds)
			}
		})
	}
}

func TestPrefixesNoCollision(t *testing.T) {
	ps, ds := Prefixes([]ServerRef{{Name: "a"}, {Name: "b"}, {Name: "my.srv"}})
	if want := []string{"a", "b", "my.srv"}; !reflect.DeepEqual(ps, want) || len(ds) != 0 {
		t.Fatalf("got %q %v", ps, ds)
	}
	if ps, ds := Prefixes(nil); len(ps) != 0 || len(ds) != 0 {
		t.Fatalf("nil input: %q %v", ps, ds)
	}
}
