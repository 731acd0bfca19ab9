package stored

import (
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
)

func tool(name, desc string, props ...string) *mcp.Tool {
	p := map[string]any{}
	for _, n := range props {
		p[n] = map[string]any{"type": "string", "description": "The " + n + "."}
	}
	return &mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object", "properties": p}}
}

// bank is a listing of four tools.
func bank() []*mcp.Tool {
	return []*mcp.Tool{
		tool("transfer", "Moves money between two accounts.", "from", "to"),
		tool("balance", "Returns an account balance.", "account"),
		tool("old", "A tool that will go away.", "x"),
		tool("lookup", "Finds an account by owner.", "owner"),
	}
}

func TestDecodeCatalogue(t *testing.T) {
	good, _ := EncodeCatalogue(bank(), nil)
	if ts, err := DecodeCatalogue(good); err != nil || len(ts) != 4 {
		t.Fatalf("round trip: %v %v", ts, err)
	}
	if ts, err := DecodeCatalogue([]byte(`[{"name":"a","inputSchema":{"type":"object"}}]`)); err != nil || len(ts) != 1 {
		t.Fatalf("bare array: %v %v", ts, err)
	}
	for name, in := range map[string]string{
		"empty":          ``,
		"null":           `null`,
		"a string":       `"tools"`,
		"truncated":      `{"format":"gatehouse/catalogue/v1","tools":[`,
		"unknown format": `{"format":"gatehouse/catalogue/v9","tools":[]}`,
		"no format":      `{"tools":[]}`,
		"tools not list": `{"format":"gatehouse/catalogue/v1","tools":{}}`,
		"null tool":      `[null]`,
		"nameless tool":  `[{"description":"x"}]`,
		"name not text":  `[{"name":7}]`,
		"trailing junk":  `[] []`,
	} {
		if _, err := DecodeCatalogue([]byte(in)); !errors.Is(err, ErrCatalogue) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// The catalogue caches the prints it is given; CachedToolPrints uses the
// cache, and fingerprints what it lacks or holds damaged.
func TestCataloguePrintCache(t *testing.T) {
	listed := bank()
	prints, rs := ToolPrints(listed)
	if len(prints) != 4 || rs != nil {
		t.Fatalf("prints %v, rejected %v", prints, rs)
	}
	b, err := EncodeCatalogue(listed, prints)
	if err != nil {
		t.Fatal(err)
	}
	tools, cached, err := DecodeCatalogueCached(b)
	if err != nil || len(tools) != 4 || len(cached) != 4 {
		t.Fatalf("decoded %d tools, %d cached pins, %v", len(tools), len(cached), err)
	}
	for _, p := range prints {
		if cached[p.Name] != (pin.Pin{Fingerprint: p.Fingerprint, Unnamed: p.Unnamed}).String() {
			t.Fatalf("cached pin of %s: %q", p.Name, cached[p.Name])
		}
	}
	// A cached pin is taken as is, even when the tool says otherwise: the
	// cache is what a wake projects, and the reconcile judges afresh.
	tools[0].Description = "changed"
	cached["balance"] = "damaged"
	got, rs := CachedToolPrints(tools, cached)
	if rs != nil || len(got) != 4 {
		t.Fatalf("cached prints %v, rejected %v", got, rs)
	}
	byName := map[string]pin.ToolPrint{}
	for _, p := range got {
		byName[p.Name] = p
	}
	for _, p := range prints {
		if byName[p.Name] != p {
			t.Errorf("%s: %+v, want %+v", p.Name, byName[p.Name], p)
		}
	}
	if got[3].Name != "balance" {
		t.Errorf("the re-fingerprinted tool comes last: %v", got)
	}
	// Without a cache (a bare array, or an empty one), every tool is
	// fingerprinted.
	if _, cached, _ := DecodeCatalogueCached([]byte(`[{"name":"a"}]`)); cached != nil {
		t.Errorf("bare array cache %v", cached)
	}
	if b, _ := EncodeCatalogue(nil, nil); string(b) != `{"format":"gatehouse/catalogue/v1","tools":[]}` {
		t.Errorf("empty catalogue %s", b)
	}
}

func FuzzDecodeCatalogue(f *testing.F) {
	good, _ := EncodeCatalogue(bank(), nil)
	f.Add(good)
	f.Add([]byte(`[{"name":"a"}]`))
	f.Add([]byte(`{"format":"gatehouse/catalogue/v1","tools":[{"name":""}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, cached, err := DecodeCatalogueCached(b)
		if err != nil {
			return
		}
		ps, rs := CachedToolPrints(tools, cached)
		if len(ps) > len(tools) {
			t.Fatalf("%d prints for %d tools", len(ps), len(tools))
		}
		if len(ps)+len(rs) != len(tools) {
			t.Fatalf("%d prints and %d rejected for %d tools", len(ps), len(rs), len(tools))
		}
		// Whatever parses re-encodes and parses to the same names, and can
		// be fingerprinted or reported.
		again, err := EncodeCatalogue(tools, nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeCatalogue(again)
		if err != nil || len(back) != len(tools) {
			t.Fatalf("re-decode: %v", err)
		}
		for i := range tools {
			if back[i].Name != tools[i].Name {
				t.Fatalf("name %q != %q", back[i].Name, tools[i].Name)
			}
		}
		if ps, rs := ToolPrints(tools); len(ps)+len(rs) != len(tools) {
			t.Fatalf("%d prints and %d rejected for %d tools", len(ps), len(rs), len(tools))
		}
	})
}
