package projection

import (
	"hash/fnv"
	"strconv"
	"unicode/utf8"
)

// MaxNameLen is the longest projected tool name (the provider limit).
const MaxNameLen = 64

// Separator joins a prefix and a remote tool name.
const Separator = "__"

// Name returns the projected name of remote tool tool under prefix: the full
// name prefix+"__"+tool, or just tool when prefix == "".
//
// The full name is returned verbatim when it matches ^[a-zA-Z0-9_-]{1,64}$.
// Otherwise each character outside [a-zA-Z0-9_-] (per rune; a multi-byte
// rune becomes ONE '_', as does each invalid UTF-8 byte) becomes '_', and
// "_" + base36(FNV-1a-32 of the UTF-8 bytes of the unsanitized full name) is
// appended to that head, the head cut so the whole is at most 64 bytes.
// See the package documentation for the exact rule. Name is pure.
func Name(prefix, tool string) string {
	full := tool
	if prefix != "" {
		full = prefix + Separator + tool
	}
	if IsLegalName(full) {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	suffix := "_" + strconv.FormatUint(uint64(h.Sum32()), 36)

	maxHead := MaxNameLen - len(suffix)
	head := make([]byte, 0, min(len(full), maxHead)+len(suffix))
	for i := 0; i < len(full) && len(head) < maxHead; {
		c := full[i]
		if legalByte(c) {
			head = append(head, c)
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(full[i:]) // size 1 for invalid bytes
		head = append(head, '_')
		i += size
	}
	return string(append(head, suffix...))
}

// IsLegalName reports whether s matches ^[a-zA-Z0-9_-]{1,64}$, the tool
// names every major model provider accepts.
func IsLegalName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !legalByte(s[i]) {
			return false
		}
	}
	return true
}

func legalByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
