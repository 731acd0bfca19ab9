package skills

import (
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
)

// contract is what trust pins for a skill: its identity, its description as
// a model reads it, the SHA-256 of its SKILL.md and its files with their
// sizes and hashes. A change to any byte of SKILL.md (the body or the front
// matter), to a served file, or to the list of files, changes the
// Fingerprint.
type contract struct {
	Plugin      string
	Name        string
	Description string
	// BodySHA256 is the lower-case hex SHA-256 of the whole SKILL.md file as
	// New read it (front matter and body), so that a change to any field of
	// the front matter is drift as well as a change to the body.
	BodySHA256 string
	// Files are the skill's files, sorted by Path.
	Files []File
}

// contract returns the contract of the skill (plugin, name), and whether the
// catalog has it.
func (c *Catalog) contract(plugin, name string) (contract, bool) {
	e := c.lookup(plugin, name)
	if e == nil {
		return contract{}, false
	}
	return contract{
		Plugin:      e.Plugin,
		Name:        e.Name,
		Description: e.Description,
		BodySHA256:  e.skillSHA,
		Files:       append([]File(nil), e.Files...),
	}, true
}

// Fingerprint returns the contract's pin fingerprint, pin.SkillFingerprint
// of its fields (domain "gatehouse/skill-contract/v1"; a file's Kind is not
// part of it, since it follows from its Path). A contract from a Catalog has
// only valid UTF-8 and always has a fingerprint; in one built by hand, bytes
// that are not valid UTF-8 are fingerprinted as U+FFFD.
func (k contract) fingerprint() string {
	v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	pc := pin.SkillContract{
		Plugin:      v(k.Plugin),
		Name:        v(k.Name),
		Description: v(k.Description),
		SkillSHA256: v(k.BodySHA256),
		Files:       make([]pin.SkillFile, len(k.Files)),
	}
	for i, f := range k.Files {
		pc.Files[i] = pin.SkillFile{Path: v(f.Path), Size: f.Size, SHA256: v(f.SHA256)}
	}
	fp, err := pin.SkillFingerprint(pc)
	if err != nil {
		// Unreachable: every string above is valid UTF-8, the only way
		// pin.SkillFingerprint fails.
		panic("skills: " + err.Error())
	}
	return fp
}

// Fingerprint returns the pin fingerprint of the skill (plugin, name): what
// trust records for it, so that any change of its description, body or
// files is drift. It reports false when the catalog has no such skill.
func (c *Catalog) Fingerprint(plugin, name string) (string, bool) {
	k, ok := c.contract(plugin, name)
	if !ok {
		return "", false
	}
	return k.fingerprint(), true
}
