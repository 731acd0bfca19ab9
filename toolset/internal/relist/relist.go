// Package relist paces re-listings. Spread and All schedule the periodic
// recheck of a fleet of servers (one at a time over an interval, or all
// now, bounded). Pacer paces the re-listings a server's announcements ask
// for (notifications/*/list_changed): a single flight with a dirty bit. At most
// one re-listing runs and one waits; the waiting one starts once the
// announcements have paused for Quiet (or MaxWait after the first), and
// the bit is cleared only once the re-listing holds its server's listing
// lock, so it lists after every change announced before. A storm of
// announcements costs one re-listing, and a storm that never pauses one
// every MaxWait.
//
//	var p relist.Pacer
//	if p.Announce() { // the first announcement since the last re-listing
//		go func() {
//			if !p.Settle(ctx) {
//				p.Clear()
//				return
//			}
//			lock(); p.Clear(); list(); unlock()
//		}()
//	}
package relist

import (
	"context"
	"sync/atomic"
	"time"
)

// Announcements are coalesced: a queued re-listing waits until none came
// for Quiet, or MaxWait at most.
const (
	Quiet   = 100 * time.Millisecond
	MaxWait = time.Second
)

// Pacer is one server's re-listing state. Its zero value is ready.
type Pacer struct {
	queued    atomic.Bool
	announced atomic.Uint64
}

// Announce records an announcement and reports whether the caller must
// queue a re-listing (none is queued yet).
func (p *Pacer) Announce() bool {
	p.announced.Add(1)
	return !p.queued.Swap(true)
}

// Queued reports whether a re-listing is queued and has not yet begun.
func (p *Pacer) Queued() bool { return p.queued.Load() }

// Clear says the queued re-listing now holds the listing lock (or gave
// up): an announcement from now on queues another.
func (p *Pacer) Clear() { p.queued.Store(false) }

// Settle waits until the announcements pause (Quiet without one, or
// MaxWait since it began). It reports false when ctx ended first.
func (p *Pacer) Settle(ctx context.Context) bool {
	start := time.Now()
	timer := time.NewTimer(Quiet)
	defer timer.Stop()
	for {
		seen := p.announced.Load()
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
		if p.announced.Load() == seen || time.Since(start) >= MaxWait {
			return true
		}
		timer.Reset(Quiet)
	}
}
