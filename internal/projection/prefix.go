package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// ServerRef is one server as configured, the input of Prefixes.
type ServerRef struct {
	// Name is the server's configured name (the key in mcp.json, or the
	// name given in code).
	Name string
	// Identity says which server this is: its URL, or its resolved command
	// and arguments joined by NUL ("\x00"). Only its SHA-256 is used.
	Identity string
	// Prefix, when non-nil, is the prefix to use as-is (even ""): it is
	// never suffixed. Nil means "use Name, collision-suffixed when needed".
	Prefix *string
}

// SuffixedPrefix returns name + "_" + the first 8 hex digits of
// SHA-256(identity): the prefix of a server whose name collides.
func SuffixedPrefix(name, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return name + "_" + hex.EncodeToString(sum[:4])
}

// Prefixes returns the prefix of each server (same index as servers) and one
// diag.ServerNameCollision diagnostic per collided name.
//
// A server with a non-nil Prefix gets *Prefix. Otherwise it gets its Name,
// unless another server in servers has the same Name (whatever that other
// server's Prefix): then it gets SuffixedPrefix(Name, Identity). All servers
// sharing a name are suffixed; none wins by order and none is dropped.
//
// The result is pure and order-independent: a server's prefix depends only on
// its own config and on whether another server shares its name, so adding a
// server renames nothing but servers of the same name. Diagnostics are sorted
// by origin (the server name). Prefixes also reports, with the same rule, any
// two servers that still end up with the same prefix (an explicit prefix
// equal to another server's, or two servers of the same name and identity):
// their tools may then project to the same names, and the caller must not
// register both.
func Prefixes(servers []ServerRef) ([]string, []diag.Diagnostic) {
	byName := make(map[string][]int, len(servers))
	for i, s := range servers {
		byName[s.Name] = append(byName[s.Name], i)
	}
	out := make([]string, len(servers))
	for i, s := range servers {
		switch {
		case s.Prefix != nil:
			out[i] = *s.Prefix
		case len(byName[s.Name]) > 1:
			out[i] = SuffixedPrefix(s.Name, s.Identity)
		default:
			out[i] = s.Name
		}
	}

	var diags []diag.Diagnostic
	reported := make(map[string]bool)
	for name, idx := range byName {
		if len(idx) < 2 {
			continue
		}
		diags = append(diags, diag.New(diag.ServerNameCollision, "", name,
			"%d servers are named %q; their tools are projected under the prefixes %s (nobody wins by order, none is dropped); give the servers distinct names or set a prefix to choose the names",
			len(idx), name, quotedPrefixes(out, idx)))
		reported[name] = true
	}

	// Equal final prefixes that the name rule did not separate.
	byPrefix := make(map[string][]int, len(servers))
	for i, p := range out {
		byPrefix[p] = append(byPrefix[p], i)
	}
	for p, idx := range byPrefix {
		if len(idx) < 2 {
			continue
		}
		names := make([]string, 0, len(idx))
		for _, i := range idx {
			names = append(names, servers[i].Name)
		}
		sort.Strings(names)
		diags = append(diags, diag.New(diag.ServerNameCollision, "", names[0],
			"servers %s all use the prefix %q, so their tools can project to the same names; give them distinct prefixes or names (servers of one name need distinct URLs or commands)",
			quoteAll(names), p))
	}
	sort.SliceStable(diags, func(i, j int) bool {
		if diags[i].Origin != diags[j].Origin {
			return diags[i].Origin < diags[j].Origin
		}
		return diags[i].Message < diags[j].Message
	})
	return out, diags
}

func quotedPrefixes(prefixes []string, idx []int) string {
	ps := make([]string, 0, len(idx))
	for _, i := range idx {
		ps = append(ps, prefixes[i])
	}
	sort.Strings(ps)
	return quoteAll(ps)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
