package pin

import "strconv"

// appendNumber writes a finite double the way ECMAScript's Number::toString
// does (ECMA-262 §6.1.6.1.20, which RFC 8785 §3.2.2.3 adopts): the shortest
// decimal digits that round-trip, in plain notation when the decimal
// exponent is in [-6, 21) and in exponent notation ("1e+21", "1.5e-7")
// otherwise; -0 is "0".
func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits: "d.ddde±XX" (or "de±XX").
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	var digits [24]byte
	k := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[k] = e[i]
			k++
		}
	}
	exp, _ := strconv.Atoi(string(e[i+1:])) // "+21", "-07": always valid
	// ECMAScript's n: the value is 0.d1d2...dk × 10^n.
	n := exp + 1
	ds := digits[:k]
	switch {
	case k <= n && n <= 21: // integer: digits then n-k zeros
		dst = append(dst, ds...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21: // decimal point inside the digits
		dst = append(dst, ds[:n]...)
		dst = append(dst, '.')
		dst = append(dst, ds[n:]...)
	case -6 < n && n <= 0: // 0.000ddd
		dst = append(dst, '0', '.')
		for j := n; j < 0; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, ds...)
	default: // exponent form
		dst = append(dst, ds[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, ds[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
