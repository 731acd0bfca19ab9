package gateway

import "strings"

// Visibility scopes. A token's scopes choose what it sees, per kind:
// "tool:NAME" or "tool:*" the tools, "skill:NAME" or "skill:*" the served
// skills (NAME is the projected name in both). Absent scopes mean all:
// a static token without scopes sees every tool and skill, and an OAuth
// token with no scope of one kind sees everything of that kind (its access
// is decided by requiredScopes). A static token's scopes are the whole
// list of what it sees: with scopes but none of a kind, it sees nothing of
// that kind — as a static token's tool scopes have always been read.

// Kinds of visibility scope.
const (
	kindTool  = "tool:"
	kindSkill = "skill:"
)

// kindScopes are the names of one kind a token's scopes let it see.
type kindScopes struct {
	all   bool
	names map[string]bool
}

func (k *kindScopes) allows(name string) bool { return k.all || k.names[name] }

// scopeSet are the tools and skills a token's scopes let it see.
type scopeSet struct {
	tools, skills kindScopes
}

// allScopes sees everything.
var allScopes = &scopeSet{tools: kindScopes{all: true}, skills: kindScopes{all: true}}

// newScopeSet reads scopes. absentMeansAll says what a kind without a
// scope in the list means: every name (OAuth tokens), or none (a static
// token's list).
func newScopeSet(scopes []string, absentMeansAll bool) *scopeSet {
	s := &scopeSet{}
	var seenTool, seenSkill bool
	for _, sc := range scopes {
		var k *kindScopes
		var name string
		if n, ok := strings.CutPrefix(sc, kindTool); ok && n != "" {
			k, name, seenTool = &s.tools, n, true
		} else if n, ok := strings.CutPrefix(sc, kindSkill); ok && n != "" {
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
