package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// interceptCall serves sdk (a real go-sdk streamable HTTP handler) on
// 127.0.0.1 behind a handler that reads each POSTed JSON-RPC message
// first. A tools/call is shown to answer with its tool's name and its
// request id as sent: answer returns true if it wrote the answer itself
// (bytes, a status, nothing), false to let sdk answer (it may count the
// call and return false). Every other request, and every call answer
// leaves to sdk, goes to sdk with its body restored. The server is closed
// at cleanup, after the caller's own later cleanups (sessions, channels).
func interceptCall(tb testing.TB, sdk http.Handler, answer func(w http.ResponseWriter, name string, id json.RawMessage) bool) *httptest.Server {
	tb.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" && answer(w, m.Params.Name, m.ID) {
				return
			}
		}
		sdk.ServeHTTP(w, r)
	}))
	tb.Cleanup(hs.Close)
	return hs
}

// writeEvent answers with HTTP 200 and one SSE message event whose data
// is msg, written as SSE data that spans lines is: one data line per line
// of msg.
func writeEvent(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "event: message\n")
	for line := range strings.SplitSeq(msg, "\n") {
		fmt.Fprintf(w, "data: %s\n", line)
	}
	fmt.Fprint(w, "\n")
}
