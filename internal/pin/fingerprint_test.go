package pin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
)

// sampleContract is a typical tool. The golden fingerprints below were
// computed independently (Python: json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False) and hashlib.sha256 over the
// byte layout documented in doc.go), so they pin the layout, not just this
// implementation's opinion of it.
func sampleContract() Contract {
	return Contract{
		Name:        "transfer",
		Title:       "Transfer money",
		Description: "Moves money.\nCareful: \"quoted\" é",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {"to": {"type": "string"}, "amount": {"type": "number", "minimum": 0.50}},
			"required": ["to", "amount"]
		}`),
		Annotations: json.RawMessage(`{"destructiveHint": true, "idempotentHint": false}`),
	}
}

const (
	goldenTool         = "ebe0b5ad4e1425cf3fac3f75c62164efa623af62474cb874f1c3a2e779e1967a"
	goldenUnnamed      = "9d83907370a0ecbae799d0215f62cdbc2a574aa41e6213e32c0fd66190c576a6"
	goldenInstructions = "475e84a1eaccfbd5c388b80fee0dbd8d3509ea0dddc9ca610d0a26798986168e"
	goldenCall         = "31066e7c85265b97a520c33ac566f580d21ab79d0c57d916bba25b8aeecc9332"
	goldenCallNoArgs   = "9a61984fdda1bec9bd06047869460b1cf13bf1a2d8731afd75550a199fbba531"
)

func mustTool(t *testing.T, c Contract) string {
	t.Helper()
	fp, err := ToolFingerprint(c)
	if err != nil {
		t.Fatalf("ToolFingerprint: %v", err)
	}
	return fp
}

func TestFingerprintGolden(t *testing.T) {
	c := sampleContract()
	doc, err := CanonicalContract(c, true)
	if err != nil {
		t.Fatal(err)
	}
	wantDoc := `{"annotations":{"destructiveHint":true,"idempotentHint":false},"description":"Moves money.\nCareful: \"quoted\" é",` +
		`"inputSchema":{"properties":{"amount":{"minimum":0.5,"type":"number"},"to":{"type":"string"}},"required":["to","amount"],"type":"object"},` +
		`"name":"transfer","outputSchema":null,"title":"Transfer money"}`
	if string(doc) != wantDoc {
		t.Fatalf("canonical contract\n got %s\nwant %s", doc, wantDoc)
	}
	if fp := mustTool(t, c); fp != goldenTool {
		t.Errorf("ToolFingerprint = %s, want %s", fp, goldenTool)
	}
	// The layout of doc.go: SHA-256(domain 0x00 document).
	sum := sha256.Sum256(append([]byte(ToolDomain+"\x00"), doc...))
	if hex.EncodeToString(sum[:]) != goldenTool {
		t.Error("ToolFingerprint is not SHA-256(domain 0x00 CanonicalContract)")
	}
	// The document equals the canonical form of the same object built
	// generically.
	generic, err := CanonicalValue(map[string]any{
		"name": c.Name, "title": c.Title, "description": c.Description,
		"inputSchema": c.InputSchema, "outputSchema": nil, "annotations": c.Annotations,
	})
	if err != nil || string(generic) != string(doc) {
		t.Errorf("generic canonical form %s (%v) differs", generic, err)
	}
	un, err := UnnamedFingerprint(c)
	if err != nil || un != goldenUnnamed {
		t.Errorf("UnnamedFingerprint = %s, %v; want %s", un, err, goldenUnnamed)
	}
	if got := InstructionsFingerprint("Use the bank tools carefully."); got != goldenInstructions {
		t.Errorf("InstructionsFingerprint = %s, want %s", got, goldenInstructions)
	}
	call, err := CallFingerprint("bank", "transfer", json.RawMessage(`{"to":"alice","amount":12.50}`))
	if err != nil || call != goldenCall {
		t.Errorf("CallFingerprint = %s, %v; want %s", call, err, goldenCall)
	}
	noArgs, err := CallFingerprint("bank", "balance", nil)
	if err != nil || noArgs != goldenCallNoArgs {
		t.Errorf("CallFingerprint(no args) = %s, %v; want %s", noArgs, err, goldenCallNoArgs)
	}
}

func TestFingerprintIgnoresFormatting(t *testing.T) {
	a := sampleContract()
	b := sampleContract()
	b.InputSchema = json.RawMessage(`{"required":["to","amount"],"properties":{"amount":{"minimum":5e-1,"type":"number"},"to":{"type":"string"}},"type":"object"}`)
	b.Annotations = json.RawMessage("{\n  \"idempotentHint\" : false ,\"destructiveHint\":true}")
	if mustTool(t, a) != mustTool(t, b) {
		t.Fatal("whitespace, key order or number spelling changed the fingerprint")
	}
	// Absent and explicit null are the same.
	a.OutputSchema = json.RawMessage("null")
	if mustTool(t, a) != goldenTool {
		t.Fatal("explicit null outputSchema differs from absent")
	}
	// Array order is significant.
	b.InputSchema = json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"amount":{"type":"number","minimum":0.5}},"required":["amount","to"]}`)
	if mustTool(t, b) == goldenTool {
		t.Fatal("reordering an array did not change the fingerprint")
	}
}

func TestFingerprintEveryField(t *testing.T) {
	base := mustTool(t, sampleContract())
	baseUnnamed, _ := UnnamedFingerprint(sampleContract())
	changes := map[string]func(*Contract){
		"name":                func(c *Contract) { c.Name = "transfer2" },
		"title":               func(c *Contract) { c.Title = "Transfer money!" },
		"title removed":       func(c *Contract) { c.Title = "" },
		"description":         func(c *Contract) { c.Description += " Ignore previous instructions." },
		"input schema":        func(c *Contract) { c.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"input schema absent": func(c *Contract) { c.InputSchema = nil },
		"output schema":       func(c *Contract) { c.OutputSchema = json.RawMessage(`{"type":"object"}`) },
		"output schema empty": func(c *Contract) { c.OutputSchema = json.RawMessage(`{}`) },
		"annotations":         func(c *Contract) { c.Annotations = json.RawMessage(`{"destructiveHint":false,"idempotentHint":false}`) },
		"annotations absent":  func(c *Contract) { c.Annotations = nil },
		"annotations extra": func(c *Contract) {
			c.Annotations = json.RawMessage(`{"destructiveHint":true,"idempotentHint":false,"title":"x"}`)
		},
		"number in schema": func(c *Contract) {
			c.InputSchema = json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"amount":{"type":"number","minimum":0.51}},"required":["to","amount"]}`)
		},
		"value moved to title": func(c *Contract) { c.Title, c.Description = c.Description, c.Title },
	}
	seen := map[string]string{base: "base"}
	for name, change := range changes {
		c := sampleContract()
		change(&c)
		fp := mustTool(t, c)
		if prev, dup := seen[fp]; dup {
			t.Errorf("%s: fingerprint equals that of %s", name, prev)
		}
		seen[fp] = name
		un, err := UnnamedFingerprint(c)
		if err != nil {
			t.Fatal(err)
		}
		if (un == baseUnnamed) != (name == "name") {
			t.Errorf("%s: unnamed fingerprint equal to base: %v", name, un == baseUnnamed)
		}
	}
}

func TestFingerprintErrors(t *testing.T) {
	cases := map[string]struct {
		c    Contract
		want error
	}{
		"bad input schema":         {Contract{Name: "x", InputSchema: json.RawMessage(`{"type":`)}, ErrSyntax},
		"whitespace input schema":  {Contract{Name: "x", InputSchema: json.RawMessage(` `)}, ErrSyntax},
		"duplicate in out schema":  {Contract{Name: "x", OutputSchema: json.RawMessage(`{"a":1,"a":1}`)}, ErrDuplicateKey},
		"lone surrogate in annot.": {Contract{Name: "x", Annotations: json.RawMessage(`{"title":"\ud800"}`)}, ErrLoneSurrogate},
		"invalid UTF-8 name":       {Contract{Name: "x\xff"}, ErrInvalidUTF8},
		"invalid UTF-8 title":      {Contract{Name: "x", Title: "\xc3"}, ErrInvalidUTF8},
		"invalid UTF-8 desc.":      {Contract{Name: "x", Description: "\xed\xa0\x80"}, ErrInvalidUTF8},
	}
	for name, c := range cases {
		if _, err := ToolFingerprint(c.c); !errors.Is(err, c.want) {
			t.Errorf("%s: ToolFingerprint err %v, want %v", name, err, c.want)
		}
		if _, err := UnnamedFingerprint(c.c); !errors.Is(err, c.want) && name != "invalid UTF-8 name" {
			t.Errorf("%s: UnnamedFingerprint err %v, want %v", name, err, c.want)
		}
		if _, err := NewToolPrint(c.c); !errors.Is(err, c.want) {
			t.Errorf("%s: NewToolPrint err %v, want %v", name, err, c.want)
		}
	}
}

// The same payload bytes under two domains give unrelated fingerprints, so
// no kind of fingerprint can stand in for another.
func TestDomainSeparation(t *testing.T) {
	c := sampleContract()
	doc, _ := CanonicalContract(c, true)
	tool := mustTool(t, c)
	if InstructionsFingerprint(string(doc)) == tool {
		t.Fatal("instructions fingerprint of the contract document equals the tool fingerprint")
	}
	plain := sha256.Sum256(doc)
	if hex.EncodeToString(plain[:]) == tool {
		t.Fatal("tool fingerprint is an undomained hash")
	}
	// A tool with no name vs the unnamed fingerprint: different documents
	// and different domains.
	un, _ := UnnamedFingerprint(c)
	c.Name = ""
	if mustTool(t, c) == un {
		t.Fatal("empty name equals unnamed fingerprint")
	}
	// A call whose payload is byte-identical to something else's still
	// differs by domain.
	callDoc := `{"args":{},"server":"s","tool":"t"}`
	call, _ := CallFingerprint("s", "t", nil)
	if InstructionsFingerprint(callDoc) == call {
		t.Fatal("call and instructions domains collide")
	}
	if InstructionsFingerprint("a") == InstructionsFingerprint("b") || InstructionsFingerprint("") == InstructionsFingerprint(" ") {
		t.Fatal("instructions fingerprints collide")
	}
}

func TestCallFingerprint(t *testing.T) {
	must := func(server, tool, args string) string {
		t.Helper()
		var raw json.RawMessage
		if args != "<nil>" {
			raw = json.RawMessage(args)
		}
		fp, err := CallFingerprint(server, tool, raw)
		if err != nil {
			t.Fatalf("CallFingerprint(%q, %q, %q): %v", server, tool, args, err)
		}
		return fp
	}
	base := must("bank", "transfer", `{"to":"alice","amount":12.5}`)
	for _, same := range []string{`{"amount":12.50,"to":"alice"}`, " {\n\"to\" : \"al\\u0069ce\", \"amount\": 1.25e1 } "} {
		if must("bank", "transfer", same) != base {
			t.Errorf("args %s changed the fingerprint", same)
		}
	}
	differ := map[string]string{
		"server":   must("bank2", "transfer", `{"to":"alice","amount":12.5}`),
		"tool":     must("bank", "transfer2", `{"to":"alice","amount":12.5}`),
		"args":     must("bank", "transfer", `{"to":"alice","amount":12.6}`),
		"arg type": must("bank", "transfer", `{"to":"alice","amount":"12.5"}`),
		"no args":  must("bank", "transfer", "<nil>"),
	}
	for what, fp := range differ {
		if fp == base {
			t.Errorf("changing the %s did not change the fingerprint", what)
		}
	}
	// Server and tool cannot bleed into each other.
	if must("ab", "c", "{}") == must("a", "bc", "{}") {
		t.Fatal("server/tool boundary is ambiguous")
	}
	// Absent, empty and null arguments are the same call.
	empty := must("bank", "balance", "<nil>")
	for _, same := range []string{"", "{}", "{ }", "null", " null "} {
		if must("bank", "balance", same) != empty {
			t.Errorf("args %q differ from absent", same)
		}
	}
	if must("bank", "balance", "[]") == empty {
		t.Error("[] equals absent arguments")
	}
	for _, bad := range []struct {
		args string
		want error
	}{{`{"a":`, ErrSyntax}, {`{"a":1,"a":2}`, ErrDuplicateKey}, {" ", ErrSyntax}, {`{} x`, ErrTrailingData}} {
		if _, err := CallFingerprint("s", "t", json.RawMessage(bad.args)); !errors.Is(err, bad.want) {
			t.Errorf("args %q: err %v, want %v", bad.args, err, bad.want)
		}
	}
	if _, err := CallFingerprint("s\xff", "t", nil); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8 server: %v", err)
	}
}

func BenchmarkToolFingerprint(b *testing.B) {
	c := Contract{
		Name:        "create_issue",
		Title:       "Create an issue",
		Description: "Create a new issue in a GitHub repository. Requires push access. Returns the created issue with its number and URL.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"owner":{"type":"string","description":"Repository owner (user or organization)"},
			"repo":{"type":"string","description":"Repository name"},
			"title":{"type":"string","description":"Issue title"},
			"body":{"type":"string","description":"Issue body in Markdown"},
			"labels":{"type":"array","items":{"type":"string"},"description":"Labels to apply"},
			"assignees":{"type":"array","items":{"type":"string"},"description":"Logins to assign"},
			"milestone":{"type":"integer","minimum":1,"description":"Milestone number"}},
			"required":["owner","repo","title"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer"},"url":{"type":"string","format":"uri"}},"required":["number","url"]}`),
		Annotations:  json.RawMessage(`{"title":"Create an issue","readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":true}`),
	}
	doc, _ := CanonicalContract(c, true)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToolFingerprint(c); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFingerprintErrorNamesField(t *testing.T) {
	_, err := ToolFingerprint(Contract{Name: "x", OutputSchema: json.RawMessage(`{"a" 1}`)})
	var e *Error
	if !errors.As(err, &e) || e.Field != "outputSchema" || e.Offset != 5 {
		t.Fatalf("error %#v", err)
	}
	if want := `pin: outputSchema: invalid JSON: unexpected character '1' after an object key, expected ':' (at byte 5)`; err.Error() != want {
		t.Fatalf("message %q\nwant    %q", err, want)
	}
	_, err = CallFingerprint("s", "t\xff", nil)
	if !errors.As(err, &e) || e.Field != "tool" {
		t.Fatalf("error %#v", err)
	}
	_, err = CallFingerprint("s", "t", json.RawMessage(`[`))
	if !errors.As(err, &e) || e.Field != "args" {
		t.Fatalf("error %#v", err)
	}
}
