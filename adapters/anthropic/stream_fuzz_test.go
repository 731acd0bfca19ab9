package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// FuzzMessagesStream: whatever a server streams as Messages API events,
// Model.TurnStream does not panic; it answers a response only when
// message_stop arrived (else an error of the adapter's), and then the
// text deltas joined are the response's text and, for each tool call,
// its argument deltas joined are its input (compacted, "{}" when none
// streamed).
func FuzzMessagesStream(f *testing.F) {
	ev := func(data string) string {
		typ := strings.SplitN(strings.SplitN(data, `"type":"`, 2)[1], `"`, 2)[0]
		return "event: " + typ + "\ndata: " + data + "\n\n"
	}
	start := ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`)
	stop := func(reason string) string {
		return ev(`{"type":"message_delta","delta":{"stop_reason":"`+reason+`","stop_sequence":null},"usage":{"output_tokens":5}}`) + ev(`{"type":"message_stop"}`)
	}
	f.Add([]byte(start + ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		ev(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}}`) +
		ev(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"world."}}`) +
		ev(`{"type":"content_block_stop","index":0}`) + stop("end_turn")))
	f.Add([]byte(start + ev(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`) +
		ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": "}}`) +
		ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"1}"}}`) +
		ev(`{"type":"content_block_stop","index":0}`) + stop("tool_use")))
	f.Add([]byte(start + ev(`{"type":"ping"}`) + ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"cut"}}`)))
	f.Add([]byte(start + ev(`{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`) + stop("end_turn")))
	f.Add([]byte(start + start + stop("end_turn")))
	f.Add([]byte(ev(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)))
	var (
		mu   sync.Mutex
		body []byte
	)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b := body
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b)
	}))
	f.Cleanup(hs.Close)
	client := sdk.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0), option.WithoutOpenTelemetry())
	model := streamModel(&client)
	f.Fuzz(func(t *testing.T, b []byte) {
		mu.Lock()
		body = b
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var text strings.Builder
		args := map[int]string{}
		resp, err := model.TurnStream(ctx, loop.ModelRequest{Messages: []loop.Message{{Role: loop.RoleUser, Content: "hi"}}}, func(d loop.Delta) {
			if d.ToolCall == nil {
				text.WriteString(d.Text)
				return
			}
			args[d.ToolCall.Index] += d.ToolCall.Args
		})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "anthropic: ") {
				t.Fatalf("error not the adapter's: %v", err)
			}
			return
		}
		if !bytes.Contains(b, []byte("message_stop")) {
			t.Fatalf("a response without message_stop: %+v", resp)
		}
		if text.String() != resp.Text {
			t.Fatalf("deltas %q, response text %q", text.String(), resp.Text)
		}
		for i, c := range resp.ToolCalls {
			a := args[i]
			if a == "" {
				a = "{}"
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(a)); err != nil || buf.String() != string(c.Args) {
				t.Fatalf("call %d: deltas %q, args %s", i, args[i], c.Args)
			}
		}
	})
}
