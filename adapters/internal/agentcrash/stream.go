package agentcrash

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Deltas collects what loop.Run streams to Options.OnDelta (Add is the
// callback). It is safe for concurrent use.
type Deltas struct {
	mu sync.Mutex
	ds []loop.Delta
}

// Add records one delta.
func (d *Deltas) Add(x loop.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ds = append(d.ds, x)
}

// All returns the deltas received, in order.
func (d *Deltas) All() []loop.Delta {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]loop.Delta(nil), d.ds...)
}

// Turn returns turn n's text deltas concatenated, its calls' argument
// deltas concatenated by index, the "index:ID:name" its calls' deltas
// carried, and how many deltas the turn had.
func (d *Deltas) Turn(n int) (text string, args map[int]string, ids []string, count int) {
	var b strings.Builder
	args = map[int]string{}
	for _, x := range d.All() {
		if x.Turn != n {
			continue
		}
		count++
		if c := x.ToolCall; c != nil {
			args[c.Index] += c.Args
			if c.ID != "" || c.Name != "" {
				ids = append(ids, fmt.Sprintf("%d:%s:%s", c.Index, c.ID, c.Name))
			}
			continue
		}
		b.WriteString(x.Text)
	}
	return b.String(), args, ids, count
}

// InOrder reports the first delta out of order: of an earlier turn after
// a later one's, text after a call's delta in the same turn, or a call's
// delta after a later call's.
func (d *Deltas) InOrder() error {
	ds := d.All()
	for i := 1; i < len(ds); i++ {
		a, b := ds[i-1], ds[i]
		if b.Turn < a.Turn || (a.Turn == b.Turn && a.ToolCall != nil && b.ToolCall == nil) ||
			(a.Turn == b.Turn && a.ToolCall != nil && b.ToolCall != nil && b.ToolCall.Index < a.ToolCall.Index) {
			return fmt.Errorf("delta %d (%+v) after %+v", i, b, a)
		}
	}
	return nil
}

// Rows returns a run's journal records as sorted "id state fingerprint
// outcome" lines (parallel calls are recorded in any order), the effect
// server's random receipts masked: two runs that did the same have the
// same rows.
func Rows(t testing.TB, s store.Store, runID string) []string {
	t.Helper()
	recs, err := s.ListRecords(context.Background(), "", runID)
	if err != nil {
		t.Fatal(err)
	}
	receipt := regexp.MustCompile(`rcpt_[0-9a-f]+`)
	var out []string
	for _, r := range recs {
		out = append(out, r.ToolCallID+" "+string(r.State)+" "+r.Fingerprint+" "+receipt.ReplaceAllString(string(r.Outcome), "rcpt_X"))
	}
	sort.Strings(out)
	return out
}
