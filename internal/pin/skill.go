package pin

import (
	"bytes"
	"io"
	"sort"
	"strconv"
)

// SkillDomain is the domain of skill fingerprints (SkillFingerprint). Like
// the other domains it is written followed by one 0x00 byte before the
// payload, so a skill never shares a fingerprint with a tool, a prompt or a
// resource template.
const SkillDomain = "gatehouse/skill-contract/v1"

// SkillFile is one file of a skill, as fingerprinted: its slash-separated
// path relative to the skill directory, its size in bytes and the lower-case
// hex SHA-256 of its content ("" when the content was not hashed, e.g. a file
// over the size a catalog serves).
type SkillFile struct {
	Path   string
	Size   int64
	SHA256 string
}

// SkillContract is the part of an Agent Skill that is fingerprinted: what a
// model reads of it (its plugin, name and description, its SKILL.md by hash)
// and the files it may read (path, size, hash). Files are fingerprinted
// sorted by path, so their order does not matter. Strings must be valid
// UTF-8.
type SkillContract struct {
	Plugin      string
	Name        string
	Description string
	// SkillSHA256 is the lower-case hex SHA-256 of the SKILL.md file.
	SkillSHA256 string
	Files       []SkillFile
}

// CanonicalSkill returns the canonical JSON document that SkillFingerprint
// hashes (after its domain prefix):
//
//	{"description":D,"files":[{"path":P,"sha256":H,"size":S},...],"name":N,"plugin":G,"skill":K}
//
// in RFC 8785 form, the files sorted by path (byte order) and S a JSON
// integer.
func CanonicalSkill(c SkillContract) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeSkill(&buf, c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeSkill(w io.Writer, c SkillContract) error {
	if err := checkUTF8("plugin", c.Plugin, "name", c.Name, "description", c.Description, "skill", c.SkillSHA256); err != nil {
		return err
	}
	files := append([]SkillFile(nil), c.Files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	b := make([]byte, 0, 128+len(c.Plugin)+len(c.Name)+len(c.Description)+128*len(files))
	b = append(b, `{"description":`...)
	b = appendString(b, c.Description)
	b = append(b, `,"files":[`...)
	for i, f := range files {
		field := "files[" + strconv.Itoa(i) + "]."
		if err := checkUTF8(field+"path", f.Path, field+"sha256", f.SHA256); err != nil {
			return err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendString(b, f.Path)
		b = append(b, `,"sha256":`...)
		b = appendString(b, f.SHA256)
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, f.Size, 10)
		b = append(b, '}')
	}
	b = append(b, `],"name":`...)
	b = appendString(b, c.Name)
	b = append(b, `,"plugin":`...)
	b = appendString(b, c.Plugin)
	b = append(b, `,"skill":`...)
	b = appendString(b, c.SkillSHA256)
	b = append(b, '}')
	_, err := w.Write(b)
	return err
}

// SkillFingerprint returns SHA-256("gatehouse/skill-contract/v1" 0x00
// CanonicalSkill(c)) in lower-case hex. It fails only when a string is not
// valid UTF-8.
func SkillFingerprint(c SkillContract) (string, error) {
	h := newHash(SkillDomain)
	if err := writeSkill(h, c); err != nil {
		return "", err
	}
	return sum(h), nil
}
