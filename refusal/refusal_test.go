package refusal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestErrorResultShape(t *testing.T) {
	want := []Code{"run_busy", "key_reused", "rate_limited", "approval_required", "approval_denied",
		"quarantined", "tool_withdrawn", "in_doubt", "denied", "call_limit", "unavailable", "auth_required"}
	if got := Codes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Codes() = %v", got)
	}
	for _, code := range want {
		e := &Error{Code: code, Message: "because", Err: errors.New("secret detail")}
		if code == RateLimited {
			e.RetryAfter = 1500 * time.Millisecond
			e.Retryable = true
		}
		if code == ApprovalRequired {
			e.ApprovalID = "apr_0123456789abcdef"
			e.Retryable = true
		}
		if code == AuthRequired {
			e.ConnectURL = "https://gw.example.com/connect/github?flow=abc"
		}
		b, err := json.Marshal(e.Result())
		if err != nil {
			t.Fatal(err)
		}
		var wire struct {
			IsError           bool             `json:"isError"`
			Content           []map[string]any `json:"content"`
			StructuredContent map[string]any   `json:"structuredContent"`
		}
		if err := json.Unmarshal(b, &wire); err != nil {
			t.Fatal(err)
		}
		if !wire.IsError || len(wire.Content) != 1 || wire.Content[0]["type"] != "text" ||
			wire.Content[0]["text"] != "["+string(code)+"] because" {
			t.Fatalf("%s: %s", code, b)
		}
		if strings.Contains(string(b), "secret detail") {
			t.Fatalf("%s: the cause leaked into the result: %s", code, b)
		}
		sc := wire.StructuredContent
		if sc["code"] != string(code) || sc["retryable"] != e.Retryable {
			t.Fatalf("%s: %s", code, b)
		}
		n := 2
		if code == RateLimited {
			n++
			if sc["retryAfterMs"] != float64(1500) {
				t.Fatalf("%s: %s", code, b)
			}
		}
		if code == ApprovalRequired {
			n++
			if sc["approvalId"] != "apr_0123456789abcdef" {
				t.Fatalf("%s: %s", code, b)
			}
		}
		if code == AuthRequired {
			n++
			if sc["connectURL"] != "https://gw.example.com/connect/github?flow=abc" {
				t.Fatalf("%s: %s", code, b)
			}
		}
		if len(sc) != n {
			t.Fatalf("%s: unexpected members: %s", code, b)
		}
		// errors.As, As, errors.Is through wrapping.
		wrapped := fmt.Errorf("calling: %w", e)
		if got, ok := As(wrapped); !ok || got != e {
			t.Fatal("As")
		}
		if !errors.Is(wrapped, &Error{Code: code}) || errors.Is(wrapped, &Error{Code: "other"}) {
			t.Fatal("errors.Is by code")
		}
		if e.Error() != "["+string(code)+"] because: secret detail" {
			t.Fatalf("Error() = %q", e.Error())
		}
	}
	if _, ok := As(errors.New("x")); ok {
		t.Fatal("As on a plain error")
	}
	// A sub-millisecond RetryAfter still says "retry later".
	r := (&Error{Code: RunBusy, RetryAfter: time.Microsecond}).Result()
	if r.StructuredContent.(map[string]any)["retryAfterMs"] != int64(1) {
		t.Fatalf("%v", r.StructuredContent)
	}
	var _ *mcp.CallToolResult = r
	for _, c := range want {
		if !c.Known() {
			t.Errorf("%s is not Known", c)
		}
	}
	if Code("other").Known() {
		t.Error("an unknown code is Known")
	}
}
