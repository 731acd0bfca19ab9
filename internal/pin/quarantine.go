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

// ListingPlaceholder stands in TrustRemedy's trust command for a listing
// fingerprint the surface does not know.
const ListingPlaceholder = "FINGERPRINT"

// TrustRemedy is the one instruction Gatehouse gives about a server whose
// listing drifted, on every surface: the quarantined tool's description,
// the refusals of its calls and of its prompts' and templates' requests,
// the drift log lines and diagnostics, `gatehouse drift list`, `drift
// show`, `trust` and `tools`. It names the safe commands only: review
// the change with `gatehouse drift show SERVER`, then accept exactly the
// listing reviewed with `gatehouse trust SERVER --listing FINGERPRINT`
// (never a plain `gatehouse trust SERVER`, which would accept whatever the
// server publishes at that moment, a later change included).
//
// listing is the reviewed listing's fingerprint where the surface knows it;
// "" writes ListingPlaceholder and says that drift show prints it. server
// is written as given: the caller passes a name safe for its surface
// (SanitizeName before a model, Visible before a terminal).
//
// The clause is in the third person and names the operator as the one who
// acts: a model reads it in a quarantined tool's description, and nothing
// in it addresses the model or asks it to do anything. It holds no
// double quotes, backticks, slashes or angle brackets, so it reads the
// same as plain text, Markdown and HTML, and fits after "until".
func TrustRemedy(server, listing string) string {
	show := "gatehouse drift show " + server
	if listing == "" {
		show += ", which prints the listing's " + ListingPlaceholder
		listing = ListingPlaceholder
	}
	return "an operator reviews the change (" + show + ") and accepts exactly the reviewed listing (gatehouse trust " +
		server + " --listing " + listing + ")"
}

// QuarantineDescription returns the description Gatehouse publishes in place
// of a quarantined tool's own. Apart from the server and tool names, passed
// through SanitizeName, every byte of it is Gatehouse's text: the reason,
// and TrustRemedy, addressed to the operator.
func QuarantineDescription(server, tool string) string {
	s, t := SanitizeName(server), SanitizeName(tool)
	return "Quarantined by Gatehouse: the contract of tool " + t + " on server " + s +
		" changed after it was trusted, so its description and schema are withheld and calls to it are refused until " +
		TrustRemedy(s, "") + "."
}
