// Package jsonscan is a small, allocation-free JSON scanner for the
// gateway's hot path.
//
// The gateway forwards JSON-RPC messages as bytes and never decodes tool
// arguments or results. It only needs to know that a message is well-formed
// JSON and where its top-level members are. [Valid] checks a whole document,
// [Value] finds the extent of the value at the start of a buffer, and
// [Object] walks the members of an object, giving each key's raw bytes and
// each value's exact bytes as sub-slices of the input.
//
// Validity follows RFC 8259 and agrees with [encoding/json.Valid] on every
// input, with one deliberate difference: nesting deeper than [MaxDepth]
// levels is rejected (encoding/json allows 10000). Like encoding/json, the
// scanner does not check that string contents are valid UTF-8. Only bytes
// below 0x20, '"' and '\\' are special inside strings.
//
// No function allocates, and the scanner is iterative: it keeps one bit per
// open object or array in a fixed-size array on the stack, so hostile input
// such as a million '[' cannot blow the stack.
package jsonscan
