package console

import (
	"fmt"
	"net/http"
	"time"
)

// events is the live-update stream (server-sent events): an event "state"
// with the live state's token and counts at once, then whenever it
// changes, the store read every c.poll. It needs a session (401 without),
// is bounded (503 beyond Options.MaxStreams) and ends when the client goes,
// the session expires, or the Serve context ends.
func (c *console) events(w http.ResponseWriter, r *http.Request) {
	s := c.session(r)
	if s == nil {
		http.Error(w, "unauthorized: log in at /login", http.StatusUnauthorized)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	if c.streams.Add(1) > c.maxStr {
		c.streams.Add(-1)
		http.Error(w, "too many live-update streams; reload later", http.StatusServiceUnavailable)
		return
	}
	defer c.streams.Add(-1)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()
	ctx := r.Context()
	tick := time.NewTicker(c.poll)
	defer tick.Stop()
	last := ""
	for {
		if c.session(r) == nil {
			return // logged out or expired
		}
		st, err := c.liveState(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("console: live updates: reading the store", "err", err)
		case st.token != last:
			last = st.token
			if _, err := fmt.Fprintf(w, "event: state\ndata: {\"state\":%q,\"approvals\":%d,\"drift\":%d}\n\n", st.token, st.approvals, st.drift); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
