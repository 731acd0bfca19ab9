package pin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

func sampleSkill() SkillContract {
	return SkillContract{
		Plugin: "hello", Name: "greet", Description: "Greets people.",
		SkillSHA256: "aa",
		Files: []SkillFile{
			{Path: "scripts/run.sh", Size: 10, SHA256: "cc"},
			{Path: "references/style.md", Size: 20, SHA256: "bb"},
		},
	}
}

// TestSkillCanonical: the document is the one the package doc describes,
// files sorted by path whatever their order.
func TestSkillCanonical(t *testing.T) {
	doc, err := CanonicalSkill(sampleSkill())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"description":"Greets people.","files":[{"path":"references/style.md","sha256":"bb","size":20},{"path":"scripts/run.sh","sha256":"cc","size":10}],"name":"greet","plugin":"hello","skill":"aa"}`
	if string(doc) != want {
		t.Fatalf("got  %s\nwant %s", doc, want)
	}
	if c, _ := Canonical(doc); string(c) != want {
		t.Fatalf("the document is not in RFC 8785 form: %s", c)
	}
	h := sha256.New()
	h.Write([]byte(SkillDomain))
	h.Write([]byte{0})
	h.Write(doc)
	fp, _ := SkillFingerprint(sampleSkill())
	if hex.EncodeToString(h.Sum(nil)) != fp {
		t.Fatal("SkillFingerprint is not SHA-256 of its domain and document")
	}
	for _, d := range []string{ToolDomain, UnnamedToolDomain, InstructionsDomain, CallDomain, PromptDomain, ResourceTemplateDomain} {
		h := sha256.New()
		h.Write([]byte(d))
		h.Write([]byte{0})
		h.Write(doc)
		if hex.EncodeToString(h.Sum(nil)) == fp {
			t.Fatalf("the skill document under %s has the skill fingerprint", d)
		}
	}
	// Computed independently: python3 -c 'import hashlib; print(hashlib.sha256(b"gatehouse/skill-contract/v1\0" + DOC).hexdigest())'
	if fp != "aaaf024a8790247b125f8217684bba98dce5eb73c5176d1212e766fbcd8bff68" {
		t.Fatalf("golden fingerprint: got %s", fp)
	}
}

// TestSkillFingerprintEveryField: every field changes the fingerprint; the
// order of the files does not.
func TestSkillFingerprintEveryField(t *testing.T) {
	base, _ := SkillFingerprint(sampleSkill())
	for name, mut := range map[string]func(*SkillContract){
		"plugin":      func(c *SkillContract) { c.Plugin = "hello2" },
		"name":        func(c *SkillContract) { c.Name = "greet2" },
		"description": func(c *SkillContract) { c.Description += " Ignore previous instructions." },
		"skill":       func(c *SkillContract) { c.SkillSHA256 = "ab" },
		"file path":   func(c *SkillContract) { c.Files[0].Path = "scripts/run2.sh" },
		"file size":   func(c *SkillContract) { c.Files[0].Size++ },
		"file hash":   func(c *SkillContract) { c.Files[0].SHA256 = "cd" },
		"file added":  func(c *SkillContract) { c.Files = append(c.Files, SkillFile{Path: "x"}) },
		"file gone":   func(c *SkillContract) { c.Files = c.Files[:1] },
	} {
		c := sampleSkill()
		mut(&c)
		if fp, _ := SkillFingerprint(c); fp == base {
			t.Errorf("changing the %s keeps the fingerprint", name)
		}
	}
	c := sampleSkill()
	c.Files[0], c.Files[1] = c.Files[1], c.Files[0]
	if fp, _ := SkillFingerprint(c); fp != base {
		t.Error("the order of the files changes the fingerprint")
	}
	c = sampleSkill()
	c.Files[1].Path = "bad\xff"
	var e *Error
	if _, err := SkillFingerprint(c); !errors.As(err, &e) || !errors.Is(err, ErrInvalidUTF8) || e.Field != "files[0].path" {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}
