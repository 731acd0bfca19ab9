// Package scopes reads the visibility scopes of the gateway's bearer
// tokens, per kind: "tool:NAME" or "tool:*" the tools a token sees,
// "skill:NAME" or "skill:*" the served skills (NAME is the projected name
// in both).
//
// Absent scopes mean all: a static token without scopes sees every tool
// and skill, and an OAuth token with no scope of one kind sees everything
// of that kind (its access is decided by requiredScopes). A static token's
// scopes are the whole list of what it sees: with scopes but none of a
// kind, it sees nothing of that kind, as a static token's tool scopes have
// always been read. A scope of a kind with an empty name ("tool:") names
// nothing and counts as no scope of that kind.
package scopes

import "strings"

// The kinds of visibility scope: a scope is a kind followed by a name.
const (
	KindTool  = "tool:"
	KindSkill = "skill:"
)

// kindScopes are the names of one kind a token's scopes let it see.
type kindScopes struct {
	all   bool
	names map[string]bool
}

func (k *kindScopes) allows(name string) bool { return k.all || k.names[name] }

// Set is what a token's scopes let it see. It is immutable.
type Set struct {
	tools, skills kindScopes
}

// All returns the Set that sees everything (a static token without
// scopes, or a gateway without auth).
func All() *Set { return &Set{tools: kindScopes{all: true}, skills: kindScopes{all: true}} }

// Tool reports whether the set sees the tool projected as name.
func (s *Set) Tool(name string) bool { return s != nil && s.tools.allows(name) }

// Skill reports whether the set sees the skill whose prompt is projected
// as name.
func (s *Set) Skill(name string) bool { return s != nil && s.skills.allows(name) }

// Parse reads a token's scopes; scopes that are not visibility scopes
// ("mcp") are ignored. absentMeansAll says what a kind without a scope in
// the list means: every name (an OAuth token), or none (a static token's
// list).
func Parse(scopes []string, absentMeansAll bool) *Set {
	s := &Set{}
	var seenTool, seenSkill bool
	for _, sc := range scopes {
		var k *kindScopes
		var name string
		if n, ok := strings.CutPrefix(sc, KindTool); ok && n != "" {
			k, name, seenTool = &s.tools, n, true
		} else if n, ok := strings.CutPrefix(sc, KindSkill); ok && n != "" {
			k, name, seenSkill = &s.skills, n, true
		} else {
			continue // not a visibility scope ("tool:" alone names nothing)
		}
		switch name {
		case "*":
			k.all = true
		default:
			if k.names == nil {
				k.names = map[string]bool{}
			}
			k.names[name] = true
		}
	}
	if absentMeansAll {
		s.tools.all = s.tools.all || !seenTool
		s.skills.all = s.skills.all || !seenSkill
	}
	return s
}
