package transport

import "strings"

// MinimalEnv (toolset.MinimalEnv) returns the entries of environ (typically os.Environ()) that
// a stdio server needs and no more: PATH, HOME, TMPDIR, TZ, LANG and
// LC_*, plus those extra names (an exact name, or a prefix followed by
// "*": "AWS_*"). Entries named GATEHOUSE_* (the gateway's own settings,
// such as GATEHOUSE_STORE, which may hold a password) are never kept,
// whatever extra says. The result is never nil, so that Options.Env set
// to it means exactly it. A server's configured env overlays it as usual.
func MinimalEnv(environ, extra []string) []string {
	out := []string{}
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.HasPrefix(k, "GATEHOUSE_") {
			continue
		}
		if minimalEnvName(k) || envNameMatches(k, extra) {
			out = append(out, kv)
		}
	}
	return out
}

// minimalEnvName reports whether MinimalEnv keeps name whatever extra
// says: what finding programs, a home directory, temporary files, the time
// zone and the locale need.
func minimalEnvName(name string) bool {
	switch name {
	case "PATH", "HOME", "TMPDIR", "TZ", "LANG":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

func envNameMatches(name string, patterns []string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if name == p {
			return true
		}
	}
	return false
}
