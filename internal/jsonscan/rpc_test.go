package jsonscan

import "testing"

// TestReadMessage: each member read as its exact bytes, absent ones nil,
// a repeated key's last value, an escaped key reported and not read, and
// anything that is not one JSON object refused.
func TestReadMessage(t *testing.T) {
	m, ok := ReadMessage([]byte(` {"jsonrpc":"2.0","id":"a","id":7,"method":"m","params":{"x":[1]},"result":{},"error":null} ` + "\n"))
	if !ok || string(m.ID) != "7" || string(m.Method) != `"m"` || string(m.Params) != `{"x":[1]}` ||
		string(m.Result) != "{}" || string(m.Error) != "null" || m.Escaped {
		t.Errorf("read %+v, %v", m, ok)
	}
	m, ok = ReadMessage([]byte(`{"i\u0064":1,"result":{}}`))
	if !ok || !m.Escaped || m.ID != nil || string(m.Result) != "{}" {
		t.Errorf("escaped key: %+v, %v", m, ok)
	}
	m, ok = ReadMessage([]byte(`{"jsonrpc":"2.0"}`))
	if !ok || m.ID != nil || m.Result != nil || m.Error != nil || m.Method != nil || m.Params != nil {
		t.Errorf("no members: %+v, %v", m, ok)
	}
	for _, bad := range []string{``, `[]`, `{"id":1`, `{"id":1}x`, `"s"`, "{\n\"id\":", `{"id":1,}`} {
		if _, ok := ReadMessage([]byte(bad)); ok {
			t.Errorf("%q read as a message", bad)
		}
	}
}
