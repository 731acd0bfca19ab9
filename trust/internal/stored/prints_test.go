package stored

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
)

func greetings() []*mcp.Prompt {
	return []*mcp.Prompt{
		{Name: "greet", Description: "Says hello.", Arguments: []*mcp.PromptArgument{{Name: "topic", Description: "The topic.", Required: true}}},
		{Name: "summarize", Description: "Summarizes a text."},
	}
}

func TestToolContract(t *testing.T) {
	tl := &mcp.Tool{Name: "t", Title: "T", Description: "d", InputSchema: map[string]any{"type": "object"},
		OutputSchema: map[string]any{"type": "string"}, Annotations: &mcp.ToolAnnotations{Title: "a"}}
	ann, _ := json.Marshal(tl.Annotations)
	c, err := ToolContract(tl)
	if err != nil || c.Name != "t" || c.Title != "T" || c.Description != "d" || string(c.InputSchema) != `{"type":"object"}` ||
		string(c.OutputSchema) != `{"type":"string"}` || string(c.Annotations) != string(ann) {
		t.Fatalf("contract %+v, %v", c, err)
	}
	c, err = ToolContract(&mcp.Tool{Name: "bare"})
	if err != nil || c.InputSchema != nil || c.OutputSchema != nil || c.Annotations != nil {
		t.Fatalf("bare contract %+v, %v", c, err)
	}
	if _, err := ToolContract(&mcp.Tool{Name: "inf", InputSchema: map[string]any{"maximum": math.Inf(1)}}); err == nil {
		t.Fatal("a schema that does not encode")
	}
	want, _ := pin.ToolFingerprint(c)
	if p, _ := ToolPrints([]*mcp.Tool{{Name: "bare"}}); len(p) != 1 || p[0].Fingerprint != want {
		t.Fatalf("print %v, want fingerprint %s", p, want)
	}
}

// Tools without a print are rejected, in order, with their reason; nil
// tools are skipped; any name is printed.
func TestToolPrintsRejected(t *testing.T) {
	listed := []*mcp.Tool{
		tool("a", "A."),
		nil,
		{Name: "prompt greet", Description: "Squats on a key."},
		{Name: "inf", InputSchema: map[string]any{"maximum": math.Inf(1)}},
		{Name: "dup", InputSchema: json.RawMessage(`{"type":"object","type":"string"}`)},
		{Name: "nul\x00byte", Description: "No store can pin this name."},
		tool("b", "B."),
	}
	prints, rs := ToolPrints(listed)
	// A name with a space is a name like any other: the baseline keeps
	// kinds apart, so it cannot squat on a prompt's entry.
	if len(prints) != 3 || prints[0].Name != "a" || prints[1].Name != "prompt greet" || prints[2].Name != "b" || prints[0].Unnamed == "" {
		t.Fatalf("prints %+v", prints)
	}
	want := []Rejected{{"inf", Unprintable}, {"dup", Unprintable}, {"nul\x00byte", Unprintable}}
	if len(rs) != len(want) {
		t.Fatalf("rejected %+v, want %+v", rs, want)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Fatalf("rejected %+v, want %+v", rs, want)
		}
	}
	if prints, rs := ToolPrints(nil); prints == nil || len(prints) != 0 || rs != nil {
		t.Fatalf("empty listing: %#v %#v", prints, rs)
	}
}

func TestPromptPrints(t *testing.T) {
	ps := greetings()
	want, err := pin.PromptFingerprint(pin.PromptContract{Name: "greet", Description: "Says hello.",
		Arguments: []pin.PromptArgument{{Name: "topic", Description: "The topic.", Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := PromptPrint(ps[0]); err != nil || p.Name != "greet" || p.Fingerprint != want {
		t.Fatalf("print %+v, %v; want %s", p, err, want)
	}
	if c := PromptContract(&mcp.Prompt{Name: "n", Arguments: []*mcp.PromptArgument{nil, {Name: "x"}}}); len(c.Arguments) != 2 ||
		c.Arguments[0] != (pin.PromptArgument{}) || c.Arguments[1].Name != "x" {
		t.Fatalf("contract %+v", c)
	}
	listed := append([]*mcp.Prompt{nil, {Name: "bad\xff"}}, ps...)
	prints, rs := PromptPrints(listed)
	if len(prints) != 2 || prints[0].Fingerprint != want || prints[1].Name != "summarize" {
		t.Fatalf("prints %+v", prints)
	}
	if len(rs) != 1 || rs[0] != (Rejected{"bad\xff", Unprintable}) {
		t.Fatalf("rejected %+v", rs)
	}
}

func TestTemplatePrints(t *testing.T) {
	r := &mcp.ResourceTemplate{URITemplate: "file:///{path}", Name: "files", Title: "Files", Description: "Reads a file.",
		MIMEType: "text/plain", Annotations: &mcp.Annotations{Priority: 0.5}}
	c, err := TemplateContract(r)
	if err != nil || c.URITemplate != r.URITemplate || c.Name != "files" || c.Title != "Files" || c.MIMEType != "text/plain" ||
		string(c.Annotations) != `{"priority":0.5}` {
		t.Fatalf("contract %+v, %v", c, err)
	}
	want, _ := pin.TemplateFingerprint(c)
	if p, err := TemplatePrint(r); err != nil || p.Name != "file:///{path}" || p.Fingerprint != want {
		t.Fatalf("print %+v, %v; want %s", p, err, want)
	}
	if c, _ := TemplateContract(&mcp.ResourceTemplate{URITemplate: "x://{a}"}); c.Annotations != nil {
		t.Fatalf("no annotations: %+v", c)
	}
	prints, rs := TemplatePrints([]*mcp.ResourceTemplate{r, nil, {URITemplate: "bad\xff"}})
	if len(prints) != 1 || prints[0].Fingerprint != want || len(rs) != 1 || rs[0] != (Rejected{"bad\xff", Unprintable}) {
		t.Fatalf("prints %+v, rejected %+v", prints, rs)
	}
}
