package audit

// isCanonical reports whether b is a JSON text that pin.Canonical returns
// unchanged, for the common shapes of a call's arguments: objects whose
// keys are in order, arrays, strings of printable ASCII without escapes,
// integers of at most 15 digits, true, false and null, no whitespace,
// nested at most maxCanonicalDepth levels. It answers false for anything
// else (an escape, a byte outside printable ASCII, a fraction or exponent,
// -0, a key out of order or given twice, text after the value), and
// ArgsDigest then canonicalizes as before: true means the digest of b is
// that of its canonical form without building it.
func isCanonical(b []byte) bool {
	end, ok := canonicalValue(b, 0, 0)
	return ok && end == len(b)
}

// maxCanonicalDepth bounds the nesting isCanonical follows (pin.Canonical
// accepts far deeper; a deeper text goes the slow way).
const maxCanonicalDepth = 64

// canonicalValue checks the value at b[i:] and returns where it ends.
func canonicalValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '{':
		return canonicalObject(b, i, depth)
	case c == '[':
		return canonicalArray(b, i, depth)
	case c == '"':
		return canonicalString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return canonicalInteger(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return 0, false
}

// canonicalObject checks the object at b[i] ('{'): its keys strictly
// increasing (byte order is UTF-16 order for printable ASCII).
func canonicalObject(b []byte, i, depth int) (int, bool) {
	if depth >= maxCanonicalDepth {
		return 0, false
	}
	i++
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	var prev []byte
	for first := true; ; first = false {
		end, ok := canonicalString(b, i)
		if !ok {
			return 0, false
		}
		key := b[i+1 : end-1]
		if !first && string(key) <= string(prev) {
			return 0, false
		}
		prev = key
		if end >= len(b) || b[end] != ':' {
			return 0, false
		}
		if i, ok = canonicalValue(b, end+1, depth+1); !ok || i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// canonicalArray checks the array at b[i] ('[').
func canonicalArray(b []byte, i, depth int) (int, bool) {
	if depth >= maxCanonicalDepth {
		return 0, false
	}
	i++
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = canonicalValue(b, i, depth+1); !ok || i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// canonicalString checks the string at b[i] ('"'): printable ASCII, no
// backslash.
func canonicalString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return 0, false
		}
	}
	return 0, false
}

// canonicalInteger checks the number at b[i]: 0, or an optional minus and
// 1 to 15 digits without a leading zero (exactly a float64, printed so by
// pin.Canonical); -0, fractions and exponents are not.
func canonicalInteger(b []byte, i int) (int, bool) {
	neg := b[i] == '-'
	if neg {
		i++
	}
	if i < len(b) && b[i] == '0' {
		if neg {
			return 0, false
		}
		i++
	} else {
		digits := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			digits++
		}
		if digits == 0 || digits > 15 {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E' || (b[i] >= '0' && b[i] <= '9')) {
		return 0, false
	}
	return i, true
}
