package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Each way a caller's message is not an answer to a tagged request leaves
// it alone; a tagged answer gives its replica and the go-sdk's ID.
func TestTaggedAnswer(t *testing.T) {
	for _, c := range []struct {
		name, body, tag string
		n               int64
		ok              bool
	}{
		{"an answer", `{"jsonrpc":"2.0","id":"gh-ab12-7","result":{}}`, "ab12", 7, true},
		{"an error answer", `{"jsonrpc":"2.0","error":{"code":-1,"message":"no"},"id":"gh-ab12-1"}`, "ab12", 1, true},
		{"spaces", ` { "id" : "gh-x-42" , "result" : {} } `, "x", 42, true},
		{"a request, not an answer", `{"jsonrpc":"2.0","id":"gh-ab12-7","method":"ping"}`, "", 0, false},
		{"a number ID", `{"jsonrpc":"2.0","id":7,"result":{}}`, "", 0, false},
		{"another string ID", `{"jsonrpc":"2.0","id":"7","result":{}}`, "", 0, false},
		{"no tag", `{"id":"gh--7","result":{}}`, "", 0, false},
		{"no number", `{"id":"gh-ab12-","result":{}}`, "", 0, false},
		{"not a number", `{"id":"gh-ab12-7x","result":{}}`, "", 0, false},
		{"a leading zero", `{"id":"gh-ab12-07","result":{}}`, "", 0, false},
		{"a sign", `{"id":"gh-ab12-+7","result":{}}`, "", 0, false},
		{"too large", `{"id":"gh-ab12-99999999999999999999","result":{}}`, "", 0, false},
		{"two IDs", `{"id":"gh-q-1","id":"gh-q-2","result":{}}`, "", 0, false},
		{"no ID", `{"jsonrpc":"2.0","result":{"id":"gh-ab12-7"}}`, "", 0, false},
		{"an escaped key", `{"\u0069d":"gh-ab12-7","result":{}}`, "", 0, false},
		{"not JSON", `{"id":"gh-ab12-7",`, "", 0, false},
		{"an array", `[{"id":"gh-ab12-7","result":{}}]`, "", 0, false},
		{"empty", ``, "", 0, false},
	} {
		tag, n, ok := taggedAnswer([]byte(c.body))
		if tag != c.tag || n != c.n || ok != c.ok {
			t.Errorf("%s: %q, %d, %v; want %q, %d, %v", c.name, tag, n, ok, c.tag, c.n, c.ok)
		}
	}
}

// FuzzTaggedAnswer: whatever the caller sends, a message read as a tagged
// answer becomes, with its ID put back, a JSON object whose id is the
// go-sdk's number and whose other members are as sent.
func FuzzTaggedAnswer(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":"gh-ab12-7","result":{"action":"accept"}}`)
	f.Add(`{"id":"gh-x-0","error":{"code":1,"message":"m"}}`)
	f.Add(`{"method":"x","id":"gh-a-1"}`)
	f.Fuzz(func(t *testing.T, body string) {
		tag, n, ok := taggedAnswer([]byte(body))
		if !ok {
			return
		}
		if tag == "" || n < 0 {
			t.Fatalf("%q: tag %q, n %d", body, tag, n)
		}
		out := withID([]byte(body), n)
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &before); err != nil {
			return // encoding/json refuses what jsonscan took (duplicate keys, bad UTF-8): the go-sdk answers it
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("%q became %q: %v", body, out, err)
		}
		var id int64
		if err := json.Unmarshal(after["id"], &id); err != nil || id != n {
			t.Fatalf("%q became %q: id %s", body, out, after["id"])
		}
		for k, v := range before {
			if k != "id" && string(after[k]) != string(v) {
				t.Fatalf("%q became %q: %s changed", body, out, k)
			}
		}
	})
}

// The event stream leaves a replica with its requests' IDs tagged, however
// the go-sdk's writes split its lines; answers, notifications and a
// result that mentions "method" pass as they are; a JSON answer is not
// touched.
func TestTagWriter(t *testing.T) {
	stream := "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"elicitation/create\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\\\"method\\\"\"}]}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"ping\"}\n\n"
	want := strings.Replace(stream, `"id":3,`, `"id":"gh-t1-3",`, 1)
	for _, size := range []int{1, 7, 64, len(stream)} {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "text/event-stream")
		w := &tagWriter{ResponseWriter: rec, tag: "t1"}
		w.WriteHeader(http.StatusOK)
		for s := stream; len(s) > 0; {
			k := min(size, len(s))
			if _, err := w.Write([]byte(s[:k])); err != nil {
				t.Fatal(err)
			}
			s = s[k:]
		}
		if got := rec.Body.String(); got != want {
			t.Errorf("writes of %d bytes:\n got %q\nwant %q", size, got, want)
		}
	}
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	w := &tagWriter{ResponseWriter: rec, tag: "t1"}
	body := `{"jsonrpc":"2.0","id":3,"method":"x"}`
	w.Write([]byte(body))
	if rec.Body.String() != body {
		t.Errorf("a JSON answer became %q", rec.Body.String())
	}
}
