package oauth

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestRefreshAfterConcurrentFirstFetch: a caller that saw no keys while the
// first fetch was under way, and asks for a refresh just after that fetch
// succeeded (within the refresh interval), gets the keys, not an error
// (TestFirstFetchShared refused one of 50 concurrent first tokens with
// "key set fetched less than the refresh interval ago" in CI).
func TestRefreshAfterConcurrentFirstFetch(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	v := &Verifier{now: func() time.Time { return now }, interval: time.Minute, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// What a concurrent first fetch left: keys, fetched a second ago.
	v.set, v.expires = &keySet{byKID: map[string][]*setKey{}}, now.Add(time.Hour)
	v.attempted, v.lastAttempt = true, now.Add(-time.Second)
	if e := v.refresh(context.Background(), true); e != nil {
		t.Fatalf("refresh within the interval after a success: %v", e)
	}
	// Within the interval after a failure, the failure stands (no fetch).
	v.lastErr = &Error{Reason: ReasonIssuerUnavailable}
	if e := v.refresh(context.Background(), true); e != v.lastErr {
		t.Fatalf("refresh within the interval after a failure: %v, want the failure", e)
	}
}
