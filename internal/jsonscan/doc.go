// Package jsonscan is a small, allocation-free JSON scanner for the
// gateway's hot path.
//
//	var method []byte
//	ok := jsonscan.Object(body, func(key []byte, escaped bool, val []byte) bool {
//		if !escaped && string(key) == "method" {
//			method = val // `"tools/call"`: the value's exact bytes, a sub-slice of body
//		}
//		return true
//	})
//	// ok: body is one valid JSON object (jsonscan.Valid and an object)
//
// On its byte path the gateway reads tools/call requests from the HTTP
// request's bytes and forwards arguments and results as bytes, without
// decoding them (package gateway/internal/wire, the relay's byte sender, the
// bound on an upstream's answers). It only needs to know that a message is
// well-formed JSON and where its top-level members are. [Valid] checks a
// whole document, [Value] finds the extent of the value at the start of a
// buffer, and [Object] walks the members of an object, giving each key's raw
// bytes and each value's exact bytes as sub-slices of the input.
// [NumbersFit] reports whether every number of a valid document fits a
// float64, so a reader can refuse what encoding/json (and the go-sdk) could
// not decode into interface values. The one writer, [AppendString], appends
// a Go string as encoding/json's Marshal would write it, without its
// reflection (a detail or a trace member built by hand on the hot path).
//
// Validity follows RFC 8259 and agrees with [encoding/json.Valid] on every
// input, with one deliberate difference: nesting deeper than [MaxDepth]
// levels is rejected (encoding/json allows 10000). Like encoding/json, the
// scanner does not check that string contents are valid UTF-8. Only bytes
// below 0x20, '"' and '\\' are special inside strings.
//
// No function allocates (except NumbersFit on a number with an exponent or
// of more than 300 digits), and the scanner is iterative: it keeps one bit per
// open object or array in a fixed-size array on the stack, so hostile input
// such as a million '[' cannot blow the stack.
package jsonscan
