package relist

import (
	"fmt"
	"log/slog"
	"time"
)

// The log of a server a toolset's first load skipped, each record once:
// one Warn when it is skipped (MsgWillRetry with the reason and Retry's
// schedule, or MsgNotRetried with why not), a Debug a failed try
// (MsgTryFailed), one Info when it joined (MsgJoined, with its tries and
// the time since the load), one Warn when a try failed for a reason
// retried no more (MsgNotRetried). Keys: server, rule, reason, retry, try,
// tries, after.
const (
	MsgWillRetry  = "toolset: server skipped; will retry"
	MsgNotRetried = "toolset: server skipped; not retried"
	MsgTryFailed  = "toolset: server retry failed"
	MsgJoined     = "toolset: server joined; its tools are served"
)

// Why says whether a skipped server is tried again, or why not.
type Why int

const (
	Retried Why = iota // it could not be reached (connection-failure): tried again
	Refused            // the configuration decided the skip, not a server down
	Unwoken            // a wake found no usable stored row, and a wake never connects
)

// String is why a server is not retried, for the log.
func (w Why) String() string {
	switch w {
	case Retried:
		return "retried"
	case Unwoken:
		return "a wake never connects a server without a usable stored row; connect it once without waking"
	}
	return "the configuration decides this skip, not a server down; it stands until the toolset is opened again"
}

// Longest is the longest wait between two tries of a server: a minute,
// or recheck (a toolset's Options.Recheck) when it is positive and shorter.
func Longest(recheck time.Duration) time.Duration {
	if recheck > 0 {
		return min(time.Minute, recheck)
	}
	return time.Minute
}

// WhyOf says whether a skipped server is tried again: only when the
// toolset's Open did not refuse it (decided), a wake did not leave it
// unwoken, and the rule of its diagnostic is connection-failure
// (unreachable).
func WhyOf(decided, unwoken, unreachable bool) Why {
	switch {
	case unwoken:
		return Unwoken
	case decided || !unreachable:
		return Refused
	}
	return Retried
}

// Schedule describes Retry's waits, most the longest.
func Schedule(most time.Duration) string {
	first := min(First, max(most, time.Millisecond))
	if first >= most {
		return fmt.Sprintf("every %v (jittered) while the toolset is open", most)
	}
	return fmt.Sprintf("after %v, then doubling the wait up to every %v (jittered) while the toolset is open", first, most)
}

// Tries is the log of one skipped server's tries (one at a time: Retry).
type Tries struct {
	log    *slog.Logger
	server string
	start  time.Time
	n      int
}

// Skipped logs that server was skipped for reason (its rule), and why it
// is or is not retried (with Retry's waits, most the longest). For a
// server tried again it returns the log of its tries, timed from now.
func Skipped(log *slog.Logger, server, rule, reason string, why Why, most time.Duration) *Tries {
	if why != Retried {
		log.Warn(MsgNotRetried, "server", server, "rule", rule, "reason", reason, "retry", "never: "+why.String())
		return nil
	}
	log.Warn(MsgWillRetry, "server", server, "rule", rule, "reason", reason, "retry", Schedule(most))
	return &Tries{log: log, server: server, start: time.Now()}
}

// Try counts a try.
func (t *Tries) Try() { t.n++ }

// Joined logs that the server is served: the last try listed it, or
// something else did since.
func (t *Tries) Joined() {
	t.log.Info(MsgJoined, "server", t.server, "tries", t.n, "after", time.Since(t.start).Round(time.Millisecond).String())
}

// Failed logs that the last try failed for reason (its rule), and reports
// whether the tries are over: the server was reachable (unreachable is
// false: a refusal of the configuration, such as an address the egress
// guard refuses), so it is not retried.
func (t *Tries) Failed(rule, reason string, unreachable bool) (over bool) {
	if unreachable {
		t.log.Debug(MsgTryFailed, "server", t.server, "try", t.n, "rule", rule, "reason", reason)
		return false
	}
	t.log.Warn(MsgNotRetried, "server", t.server, "rule", rule, "reason", reason, "try", t.n, "retry", "no more: "+Refused.String())
	return true
}
