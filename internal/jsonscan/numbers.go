package jsonscan

import (
	"bytes"
	"strconv"
)

// NumbersFit reports whether every number in v, a valid JSON value (see
// [Valid]), is within the range of a float64: what encoding/json (and the
// go-sdk's decoder) can decode into an interface value. A number beyond it
// (1e400) makes such a decode fail, so a reader that must agree with them
// refuses it too. Numbers that underflow to zero fit, as they decode. It
// does not allocate for numbers of up to 300 digits without an exponent.
func NumbersFit(v []byte) bool {
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case c == '"':
			end, _ := scanString(v, i+1)
			if end < 0 {
				return false
			}
			i = end
		case c == '-' || isDigit(c):
			end := scanNumber(v, i)
			if end < 0 {
				return false
			}
			if !numberFits(v[i:end]) {
				return false
			}
			i = end
		default:
			i++
		}
	}
	return true
}

// numberFits reports whether one number token is within float64 range.
func numberFits(num []byte) bool {
	if len(num) <= 300 && !bytes.ContainsAny(num, "eE") {
		return true // below 1e300 in magnitude
	}
	_, err := strconv.ParseFloat(string(num), 64)
	return err == nil
}
