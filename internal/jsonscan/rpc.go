package jsonscan

// Message is the top-level members of a JSON-RPC message that tell what
// it is, as sub-slices of its bytes (nil: absent; a repeated key's last
// value). Escaped reports a key written with escapes, which is not read
// (it may decode to one of these: a reader that must know what the
// message is hands it to a full decoder).
type Message struct {
	ID, Result, Error, Method, Params []byte
	Escaped                           bool
}

// ReadMessage reads the members of the JSON object b that a JSON-RPC
// message is told by (id, result, error, method, params), without
// decoding any. ok is false when b is not one valid JSON object (Object).
func ReadMessage(b []byte) (m Message, ok bool) {
	ok = Object(b, func(key []byte, escaped bool, val []byte) bool {
		if escaped {
			m.Escaped = true
			return true
		}
		switch string(key) {
		case "id":
			m.ID = val
		case "result":
			m.Result = val
		case "error":
			m.Error = val
		case "method":
			m.Method = val
		case "params":
			m.Params = val
		}
		return true
	})
	return m, ok
}
