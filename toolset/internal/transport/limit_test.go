package transport

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// events splits an SSE stream into its events, each with the blank line
// that ends it (a trailing unterminated event as it is).
func events(s string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		cur.WriteString(line)
		if strings.TrimRight(line, "\r\n") == "" && strings.HasSuffix(line, "\n") {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// limited reads stream through an eventLimit of max bytes, in chunks of
// one byte when slow.
func limited(stream string, max int, id string, slow bool) string {
	var r io.Reader = strings.NewReader(stream)
	if slow {
		r = iotest.OneByteReader(r)
	}
	el := &eventLimit{body: io.NopCloser(r), max: max, id: []byte(id)}
	out, _ := io.ReadAll(el)
	el.Close()
	return string(out)
}

// reference is what eventLimit must produce: each event whose bytes,
// ending blank line included, are within max passes as it is; a larger
// one becomes AnswerTooLarge for id (or nothing, without one).
func reference(stream string, max int, id string) string {
	var b strings.Builder
	for _, ev := range events(stream) {
		if len(ev) <= max {
			b.WriteString(ev)
			continue
		}
		if id != "null" {
			b.WriteString("event: message\ndata: " + string(AnswerTooLarge([]byte(id))) + "\n\n")
		}
	}
	return b.String()
}

func TestEventLimit(t *testing.T) {
	const max = 40
	small := "event: message\ndata: {\"id\":1}\n\n"
	big := "event: message\ndata: " + strings.Repeat("x", 60) + "\n\n"
	long := "data: " + strings.Repeat("y", 100) // no newline at all
	for name, c := range map[string]struct{ stream, id string }{
		"small events pass":               {small + small, "1"},
		"a big event is replaced":         {small + big + small, "7"},
		"without a request it is dropped": {big + small, "null"},
		"a line that never ends":          {small + long, "7"},
		"CRLF lines":                      {strings.ReplaceAll(small+big, "\n", "\r\n"), `"a"`},
		"exactly at the limit":            {"data: " + strings.Repeat("z", max-8) + "\n\n", "1"},
		"one past the limit":              {"data: " + strings.Repeat("z", max-7) + "\n\n", "1"},
	} {
		for _, slow := range []bool{false, true} {
			got := limited(c.stream, max, c.id, slow)
			if want := reference(c.stream, max, c.id); got != want {
				t.Errorf("%s (slow %v):\n got %q\nwant %q", name, slow, got, want)
			}
		}
	}
}

// The JSON answer over the limit becomes the error answer to the
// request's ID; one within passes.
func TestAnswerLimitJSON(t *testing.T) {
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		n := 10
		if req.Header.Get("X-Big") != "" {
			n = 100
		}
		body := `{"jsonrpc":"2.0","id":5,"result":{"t":"` + strings.Repeat("x", n) + `"}}`
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}, nil
	})
	l := &AnswerLimit{Base: rt, Max: 80}
	do := func(big bool) string {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call"}`)))
		if big {
			req.Header.Set("X-Big", "1")
		}
		resp, err := l.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.ContentLength != int64(len(b)) {
			t.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(b))
		}
		return string(b)
	}
	if got := do(false); !strings.Contains(got, `"result"`) {
		t.Errorf("a small answer: %s", got)
	}
	if got, want := do(true), string(AnswerTooLarge([]byte("5"))); got != want {
		t.Errorf("a large answer: %s, want %s", got, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzEventLimit: whatever the stream and the chunking, eventLimit passes
// exactly the events within the limit and replaces the others.
func FuzzEventLimit(f *testing.F) {
	f.Add("event: message\ndata: {}\n\ndata: "+strings.Repeat("x", 50)+"\n\n", 32, true)
	f.Add("data: a\r\n\r\ndata: b\n", 8, false)
	f.Add("\n\n\n", 1, true)
	f.Fuzz(func(t *testing.T, stream string, max int, slow bool) {
		if max < 1 || max > 1<<12 || len(stream) > 1<<14 {
			return
		}
		if got, want := limited(stream, max, "3", slow), reference(stream, max, "3"); got != want {
			t.Fatalf("max %d:\n got %q\nwant %q", max, got, want)
		}
	})
}

// checked reads stream through an eventLimit that checks a call's events
// (max large enough for every event).
func checked(stream, id string, slow bool) string {
	var r io.Reader = strings.NewReader(stream)
	if slow {
		r = iotest.OneByteReader(r)
	}
	el := &eventLimit{body: io.NopCloser(r), max: 1 << 20, id: []byte(id), check: true}
	out, _ := io.ReadAll(el)
	el.Close()
	return string(out)
}

// Every way a call's event can be one the go-sdk's client refuses (taking
// its connection down) becomes BadAnswer for the call; the events it reads
// pass as they are.
func TestEventCheck(t *testing.T) {
	bad := "event: message\ndata: " + string(BadAnswer([]byte("7"), ReasonNotJSONRPC)) + "\n\n"
	good := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"
	for name, c := range map[string]struct{ stream, want string }{
		"a message passes":              {good, good},
		"data over several lines":       {"data: {\"jsonrpc\":\"2.0\",\ndata:  \"id\":7,\"result\":{}}\n\n", ""},
		"a field that is no field":      {"data: {\"jsonrpc\":\"2.0\",\n data: \"id\":7,\"result\":{}}\n\n", bad},
		"no JSON":                       {"event: message\ndata: {nope\n\n", bad},
		"JSON but no JSON-RPC":          {"data: [1,2]\n\n", bad},
		"a line without a colon":        {"event: message\ndata: {}\n}\n\n", bad},
		"pretty-printed, one data line": {"data: {\n  \"id\": 7\n}\n\n", bad},
		"another event name is skipped": {"event: other\ndata: {nope\n\n", "event: other\ndata: {nope\n\n"},
		"an event without data":         {"id: 1\nretry: 5\n\n", "id: 1\nretry: 5\n\n"},
		"a comment-only event":          {": hi\n\n", ": hi\n\n"},
		"CRLF lines":                    {strings.ReplaceAll(good, "\n", "\r\n"), strings.ReplaceAll(good, "\n", "\r\n")},
		"bad then good":                 {"data: x\n\n" + good, bad + good},
	} {
		want := c.want
		if name == "data over several lines" {
			want = c.stream
		}
		for _, slow := range []bool{false, true} {
			if got := checked(c.stream, "7", slow); got != want {
				t.Errorf("%s (slow %v):\n got %q\nwant %q", name, slow, got, want)
			}
		}
	}
}

// FuzzEventCheck: whatever the stream, a call's events come out as the
// go-sdk's client reads them without failing (an event it refuses is
// replaced by BadAnswer), and an event it reads passes untouched.
func FuzzEventCheck(f *testing.F) {
	f.Add("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n", false)
	f.Add("data: {\n}\n\ndata: x\r\n\r\n", true)
	f.Add("event: other\ndata: {\n\n: c\n\n", false)
	f.Fuzz(func(t *testing.T, stream string, slow bool) {
		if len(stream) > 1<<14 {
			return
		}
		got := checked(stream, "3", slow)
		var want strings.Builder
		for _, ev := range events(stream) {
			lines := strings.SplitAfter(ev, "\n")
			last := lines[len(lines)-1]
			if last == "" && len(lines) > 1 {
				last = lines[len(lines)-2]
			}
			complete := strings.HasSuffix(ev, "\n") && strings.TrimRight(last, "\r\n") == ""
			if !complete || sdkReads(ev) {
				want.WriteString(ev)
				continue
			}
			want.WriteString("event: message\ndata: " + string(BadAnswer([]byte("3"), ReasonNotJSONRPC)) + "\n\n")
		}
		if got != want.String() {
			t.Fatalf("\n got %q\nwant %q", got, want.String())
		}
	})
}

// sdkReads is the go-sdk client's reading of one event, written plainly:
// every non-blank line has a colon; the data of a message event, if any,
// decodes as a JSON-RPC message.
func sdkReads(ev string) bool {
	name, data, n := "", "", 0
	for _, line := range strings.Split(ev, "\n") {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return false
		}
		switch k {
		case "event":
			name = strings.TrimSpace(v)
		case "data":
			if n++; n > 1 {
				data += "\n"
			}
			data += strings.TrimSpace(v)
		}
	}
	if data == "" || (name != "" && name != "message") {
		return true
	}
	_, err := jsonrpc.DecodeMessage([]byte(data))
	return err == nil
}

// BenchmarkEventLimitLongLine reads one event of a single line past
// MaxAnswer (a server's largest answer, or a hostile one's) as an HTTP
// body delivers it, in 32 KiB chunks: each byte is to be looked at about
// once, not once per chunk that follows it.
func BenchmarkEventLimitLongLine(b *testing.B) {
	stream := "event: message\ndata: " + strings.Repeat("x", MaxAnswer+1024) + "\n\n"
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		el := &eventLimit{body: io.NopCloser(&chunked{s: stream, n: 32 << 10}), max: MaxAnswer, id: []byte("1")}
		n, _ := io.Copy(io.Discard, el)
		el.Close()
		if want := int64(len("event: message\ndata: \n\n") + len(AnswerTooLarge([]byte("1")))); n != want {
			b.Fatalf("read %d bytes, want %d (the answer in place of the event)", n, want)
		}
	}
}

// chunked reads s at most n bytes at a time.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.s) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}
