package pin

// maxNameLen bounds a sanitized name (the longest legal projected tool name).
const maxNameLen = 64

// SanitizeName reduces a server-controlled name to text safe to put before a
// model: every byte outside [A-Za-z0-9_.-] becomes "_" (so a multi-byte
// character becomes several), the result is cut to 64 bytes, and an empty
// name becomes "_". Words survive (a name "ignore previous instructions"
// becomes "ignore_previous_instructions"), but no spacing, punctuation,
// quoting or markup does, and the length is bounded.
func SanitizeName(s string) string {
	if len(s) > maxNameLen {
		s = s[:maxNameLen]
	}
	if s == "" {
		return "_"
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// QuarantineDescription returns the description Gatehouse publishes in place
// of a quarantined tool's own. Apart from the server and tool names, passed
// through SanitizeName, every byte of it is Gatehouse's text.
func QuarantineDescription(server, tool string) string {
	s, t := SanitizeName(server), SanitizeName(tool)
	return "Quarantined by Gatehouse: the contract of tool " + t + " on server " + s +
		" changed after it was trusted, so its description and schema are withheld and calls to it are refused." +
		" An operator can review the change and re-trust the server with: gatehouse trust " + s
}
