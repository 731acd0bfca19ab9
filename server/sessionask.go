package server

//lint:file-ignore SA1019 sampling and roots (deprecated by SEP-2577, still in 2025-11-25) are requests a replica sends its caller.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store"
)

// A request a session sends its caller outside any request of the
// caller's (sampling, elicitation or roots that an upstream asks of its
// own accord) goes on the caller's standalone stream. When another replica
// holds that stream, the go-sdk here has nowhere to write it: the replica
// asks the holder through the Messenger (kindAsk), the holder sends the
// request on the stream as its own (the caller's answer reaches it by its
// tagged ID, sessionbus.go) and sends the answer back (kindReply). A
// request or an answer larger than store.MaxMessage is not passed on: the
// request fails as it would without a stream.

// askWait bounds how long a request passed on to the holder of the
// caller's stream may wait for its answer (a person may be answering an
// elicitation).
const askWait = 5 * time.Minute

// While the holder asks, it tells the replica that passed the request on
// so every askBeat (kindAsking, the first at once); that one gives up on a
// holder gone without a word (a crash, a cut network) after askFirst
// without the first, askQuiet without one since, instead of askWait.
const (
	askFirst = 5 * time.Second
	askBeat  = 10 * time.Second
	askQuiet = 30 * time.Second
)

// askTiming is a heartbeat's three durations.
type askTiming struct{ first, beat, quiet time.Duration }

// asking returns the heartbeat's durations.
func (x *sharedSessions) asking() askTiming {
	if t := x.askTimes.Load(); t != nil {
		return *t
	}
	return askTiming{first: askFirst, beat: askBeat, quiet: askQuiet}
}

// codeRejected is the code of the go-sdk's error for a message its
// transport did not deliver (no stream to write it on).
const codeRejected = -32005

// askBody is a kindAsk's Body: the request, and for sampling which of the
// go-sdk's two calls made it (the result's type follows).
type askBody struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	WithTools bool            `json:"withTools,omitempty"`
}

// replyBody is a kindReply's Body: the caller's result, or the error.
type replyBody struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *jsonrpc.Error  `json:"error,omitempty"`
}

// askHolder passes on a request the go-sdk could not write on session ss
// here because another replica holds the caller's stream, waits for the
// answer, and reports whether it passed the request on (then the result
// and error are the caller's answer).
func (x *sharedSessions) askHolder(ctx context.Context, method string, req mcp.Request, sendErr error) (mcp.Result, bool, error) {
	// The go-sdk's transport refuses what it cannot write with its
	// "rejected by transport" error; any other is the caller's answer or
	// the request given up.
	var wire *jsonrpc.Error
	if ctx.Value(noteKey{}) != nil || ctx.Err() != nil || !errors.As(sendErr, &wire) || wire.Code != codeRejected {
		return nil, false, nil
	}
	var body askBody
	switch method {
	case "elicitation/create", "roots/list":
	case "sampling/createMessage":
		_, body.WithTools = req.GetParams().(*mcp.CreateMessageWithToolsParams)
	default:
		return nil, false, nil
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return nil, false, nil
	}
	h := x.lookup(ss.ID())
	if h == nil || h.ss != ss || h.streams.Load() > 0 {
		return nil, false, nil
	}
	h.mu.Lock()
	holder := h.saved.Stream
	h.mu.Unlock()
	if holder == "" || holder == x.tag {
		return nil, false, nil
	}
	params, err := json.Marshal(req.GetParams())
	if err != nil {
		return nil, false, nil
	}
	body.Method, body.Params = method, params
	raw, _ := json.Marshal(body)
	nonce, reply, forget := x.await()
	defer forget()
	beats, unbeat := x.awaitBeats(nonce)
	defer unbeat()
	msg, _ := json.Marshal(busMessage{Session: ss.ID(), Kind: kindAsk, From: x.tag, Nonce: nonce, Body: raw})
	if len(msg) > store.MaxMessage {
		x.log.Debug("server: a request for the caller's stream, held by another replica, is too large to pass on",
			"method", method, "bytes", len(msg), "max", store.MaxMessage)
		return nil, false, nil
	}
	wctx, cancel := context.WithTimeout(ctx, askWait)
	defer cancel()
	if err := x.bus.Send(wctx, busBox(holder), msg); err != nil {
		x.log.Debug("server: a request for the caller's stream was not passed on", "err", err)
		return nil, false, nil
	}
	x.asked.Add(1)
	var got []byte
	at := x.asking()
	quiet := time.NewTimer(at.first)
	defer quiet.Stop()
	heard := false
wait:
	for {
		select {
		case got = <-reply:
			break wait
		case <-beats:
			heard = true
			quiet.Reset(at.quiet)
		case <-quiet.C:
			if !heard {
				return nil, true, fmt.Errorf("server: the replica holding the caller's stream (%s) did not take the request within %s: %w",
					holder, at.first, errHolderGone)
			}
			return nil, true, fmt.Errorf("server: the replica holding the caller's stream (%s) went quiet for %s while asking: %w",
				holder, at.quiet, errHolderGone)
		case <-wctx.Done():
			return nil, true, fmt.Errorf("server: no answer from the replica holding the caller's stream: %w", wctx.Err())
		}
	}
	var rb replyBody
	if err := json.Unmarshal(got, &rb); err != nil {
		return nil, true, fmt.Errorf("server: the answer of the replica holding the caller's stream: %w", err)
	}
	if rb.Error != nil {
		return nil, true, rb.Error
	}
	var res mcp.Result
	switch {
	case method == "elicitation/create":
		res = new(mcp.ElicitResult)
	case method == "roots/list":
		res = new(mcp.ListRootsResult)
	default: // the go-sdk reads every sampling result as this one
		res = new(mcp.CreateMessageWithToolsResult)
	}
	if err := json.Unmarshal(rb.Result, res); err != nil {
		return nil, true, fmt.Errorf("server: the caller's result, passed on: %w", err)
	}
	return res, true, nil
}

// askHere sends a request another replica passed on to the caller on the
// standalone stream this replica holds, and sends the answer back. It
// runs in a goroutine of its own, which ends with the request (at most
// askWait).
func (x *sharedSessions) askHere(m busMessage) {
	if m.From == "" || m.Nonce == "" {
		return
	}
	parent := context.Background()
	if h := x.lookup(m.Session); h != nil && h.asking != nil {
		parent = h.asking // ends when the session closes here
	}
	ctx, cancel := context.WithTimeout(context.WithValue(parent, noteKey{}, true), askWait)
	defer cancel()
	var rb replyBody
	asking := make(chan struct{})
	var beating sync.WaitGroup
	beating.Go(func() { x.beatAsker(m, asking) })
	res, err := x.ask(ctx, m)
	close(asking)
	beating.Wait()
	switch {
	case err != nil:
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) {
			wire = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		rb.Error = wire
	default:
		rb.Result, err = json.Marshal(res)
		if err != nil {
			rb.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	}
	raw, _ := json.Marshal(rb)
	msg, _ := json.Marshal(busMessage{Session: m.Session, Kind: kindReply, Nonce: m.Nonce, Body: raw})
	if len(msg) > store.MaxMessage {
		raw, _ = json.Marshal(replyBody{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("the caller's answer (%d bytes) is too large to pass between replicas (at most %d)", len(msg), store.MaxMessage)}})
		msg, _ = json.Marshal(busMessage{Session: m.Session, Kind: kindReply, Nonce: m.Nonce, Body: raw})
	}
	sctx, scancel := context.WithTimeout(context.Background(), noteTimeout)
	defer scancel()
	if err := x.bus.Send(sctx, busBox(m.From), msg); err != nil {
		x.log.Debug("server: the caller's answer was not passed back", "err", err)
	}
}

// errHolderGone is the cause of a request passed on to the replica holding
// the caller's stream when that replica stopped saying it is still asking
// (askFirst, askQuiet).
var errHolderGone = errors.New("server: the replica holding the caller's stream is gone")

// beatAsker tells m's sender that its request is still being asked, at
// once and every askBeat, until asking is closed.
func (x *sharedSessions) beatAsker(m busMessage, asking <-chan struct{}) {
	msg, _ := json.Marshal(busMessage{Session: m.Session, Kind: kindAsking, Nonce: m.Nonce})
	tick := time.NewTicker(x.asking().beat)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
		if err := x.bus.Send(ctx, busBox(m.From), msg); err != nil {
			x.log.Debug("server: a heartbeat of a request passed on was not sent", "err", err)
		}
		cancel()
		select {
		case <-asking:
			return
		case <-tick.C:
		}
	}
}

// awaitBeats registers a wait for the heartbeats of the holder asking the
// request nonce.
func (x *sharedSessions) awaitBeats(nonce string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	x.mu.Lock()
	x.beats[nonce] = ch
	x.mu.Unlock()
	return ch, func() {
		x.mu.Lock()
		delete(x.beats, nonce)
		x.mu.Unlock()
	}
}

// beat hands a holder's heartbeat to the wait for nonce, if any.
func (x *sharedSessions) beat(nonce string) {
	x.mu.Lock()
	ch := x.beats[nonce]
	x.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default: // one pending is enough
		}
	}
}

// ask makes the request of m on the session here, which must hold the
// caller's stream.
func (x *sharedSessions) ask(ctx context.Context, m busMessage) (any, error) {
	h := x.lookup(m.Session)
	if h == nil || h.streams.Load() == 0 {
		return nil, errors.New("the caller's stream is not held by the replica asked")
	}
	var b askBody
	if err := json.Unmarshal(m.Body, &b); err != nil {
		return nil, fmt.Errorf("a request passed on: %w", err)
	}
	switch {
	case b.Method == "elicitation/create":
		var p mcp.ElicitParams
		if err := json.Unmarshal(b.Params, &p); err != nil {
			return nil, err
		}
		return h.ss.Elicit(ctx, &p)
	case b.Method == "roots/list":
		var p mcp.ListRootsParams
		if err := json.Unmarshal(b.Params, &p); err != nil {
			return nil, err
		}
		return h.ss.ListRoots(ctx, &p)
	case b.Method == "sampling/createMessage" && b.WithTools:
		var p mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(b.Params, &p); err != nil {
			return nil, err
		}
		return h.ss.CreateMessageWithTools(ctx, &p)
	case b.Method == "sampling/createMessage":
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(b.Params, &p); err != nil {
			return nil, err
		}
		return h.ss.CreateMessage(ctx, &p)
	}
	return nil, fmt.Errorf("a request passed on: method %q is not one a replica asks for another", b.Method)
}
