package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// splitReader reads r in reads of at most n bytes.
type splitReader struct {
	r io.Reader
	n int
}

func (c splitReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// FuzzPipeReader: whatever a server writes, in reads of any size, the
// go-sdk's reader gets exactly that output less whole lines taken as
// answers to the pipe's requests, each one JSON object with a pipe's ID; a
// request waiting gets at most one answer, the one its ID names; nothing
// panics, and a line past the limit is passed on whole.
func FuzzPipeReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"gatehouse-s1","result":{"content":[]}}` + "\n",
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":"gatehouse-s2","error":{"code":-1,"message":"m"}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n" + `{"jsonrpc":"2.0","id":"gatehouse-s1","result":{}}`,
		"{\n \"jsonrpc\": \"2.0\",\n \"id\": \"gatehouse-s1\",\n \"result\": {}\n}\n" + `{"jsonrpc":"2.0","id":"gatehouse-s2","result":{}}` + "\n",
		`[{"jsonrpc":"2.0","id":"gatehouse-s1","result":{}}]` + "\n",
		`{"jsonrpc":"2.0","id":"gatehouse-s1","method":"ping"}` + "\r\n  \n" + `{"id":"gatehouse-s01","result":1}` + "\n",
		`{"id":"gatehouse-s3","result":{},"id":"gatehouse-s1"}` + "\n" + `{"i\u0064":"gatehouse-s2","result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":"gatehouse-s2","result":{"text":"` + string(bytes.Repeat([]byte("x"), 100)) + `"}}` + "\n",
		"not json at all\n" + `{"id":"gatehouse-s1","result":{}}` + "\n",
	} {
		f.Add([]byte(s), uint8(7))
		f.Add([]byte(s), uint8(255))
	}
	f.Fuzz(func(t *testing.T, out []byte, cut uint8) {
		var mu sync.Mutex
		p := newPipe(io.Discard, &mu)
		chans := map[uint64]chan pipeAnswer{}
		for n := uint64(1); n <= 3; n++ {
			chans[n] = make(chan pipeAnswer, 1)
			p.waiting[n] = chans[n]
		}
		var tapped int
		r := newPipeReader(splitReader{bytes.NewReader(out), int(cut) + 1}, p, 96, func(string, json.RawMessage) { tapped++ })
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		// got is out less whole lines, each an answer with a pipe's ID.
		rest := got
		in := out
		for len(in) > 0 {
			i := bytes.IndexByte(in, '\n')
			line := in
			if i >= 0 {
				line = in[:i+1]
			}
			in = in[len(line):]
			if bytes.HasPrefix(rest, line) {
				rest = rest[len(line):]
				continue
			}
			if line[len(line)-1] != '\n' || !jsonscan.Valid(line) || !bytes.Contains(line, []byte(pipeIDPrefix)) {
				t.Fatalf("the line %q is missing from what the go-sdk read:\n%q", line, got)
			}
		}
		if len(rest) > 0 {
			t.Fatalf("the go-sdk read %q that the server did not write (after %q)", rest, got[:len(got)-len(rest)])
		}
		// The stream ended: every request left was failed, each once.
		for n, ch := range chans {
			select {
			case <-ch:
			default:
				t.Fatalf("request %d got no answer when the output ended", n)
			}
			select {
			case a := <-ch:
				t.Fatalf("request %d got a second answer %+v", n, a)
			default:
			}
		}
		if tapped > bytes.Count(out, []byte("\n"))+1 {
			t.Fatalf("%d notifications tapped from %d lines", tapped, bytes.Count(out, []byte("\n"))+1)
		}
	})
}
