package skills_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/skills"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// watched is what a Watcher's Serve and OnEvent were handed.
type watched struct {
	mu     sync.Mutex
	served []string
	serves int
	builds int
	events []skills.DriftEvent
}

func (w *watched) options(dir string) skills.WatchOptions {
	return skills.WatchOptions{
		Instance: "gw-1",
		Build: func() *skills.Catalog {
			// Called from Run's goroutine: no t.Fatal here.
			w.mu.Lock()
			w.builds++
			w.mu.Unlock()
			res := plugin.Load(dir)
			cat, _ := skills.New([]*plugin.Plugin{res.Plugin}, nil)
			return cat
		},
		Serve: func(c *skills.Catalog) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.served, w.serves = served(c), w.serves+1
		},
		OnEvent: func(ev skills.DriftEvent) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.events = append(w.events, ev)
		},
	}
}

func (w *watched) now() ([]string, int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.served), w.serves, len(w.events)
}

// run runs w.Run until the test ends.
func run(t *testing.T, w *skills.Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run returned %v", err)
		}
	})
}

// TestWatcherRecheckSeesDisk: Check serves the judged catalog (once while
// it does not change); Run's recheck builds the catalog again, so an edit
// on disk is withheld at the next recheck, its event reported once.
func TestWatcherRecheckSeesDisk(t *testing.T) {
	stores(t, func(t *testing.T, open func() store.Store) {
		st := open()
		dir := acmePlugin(t)
		var seen watched
		opts := seen.options(dir)
		opts.Recheck, opts.Poll = 20*time.Millisecond, time.Hour
		w := skills.NewWatcher(st, opts)
		for range 2 {
			if err := w.Check(ctxT(t), nil, true); err != nil {
				t.Fatal(err)
			}
		}
		if got, n, _ := seen.now(); !slices.Equal(got, []string{"acme/count", "acme/greet"}) || n != 1 {
			t.Fatalf("Check served %v (%d times, want once)", got, n)
		}
		run(t, w)
		writeFile(t, dir, "skills/greet/references/style.md", "Be brief. "+rugLine+"\n")
		waitFor(t, "the edit withheld", func() bool { got, _, _ := seen.now(); return slices.Equal(got, []string{"acme/count"}) })
		seen.mu.Lock()
		after := seen.builds
		seen.mu.Unlock()
		waitFor(t, "three more rechecks", func() bool { seen.mu.Lock(); defer seen.mu.Unlock(); return seen.builds >= after+3 })
		if _, _, n := seen.now(); n != 1 {
			t.Fatalf("%d events for one drift", n)
		}
	})
}

// TestWatcherPollSeesTrust: with no recheck, a trust made through the
// store by another process (the operator's `gatehouse trust`) is applied
// at Run's next poll of Heads.
func TestWatcherPollSeesTrust(t *testing.T) {
	stores(t, func(t *testing.T, open func() store.Store) {
		st := open()
		dir := acmePlugin(t)
		var seen watched
		opts := seen.options(dir)
		opts.Poll = 10 * time.Millisecond
		w := skills.NewWatcher(st, opts)
		if err := w.Check(ctxT(t), nil, true); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "skills/greet/SKILL.md", trustSkillMD("greet", "Greet someone by name.", rugLine+"\n"))
		if err := w.Check(ctxT(t), nil, true); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := seen.now(); !slices.Equal(got, []string{"acme/count"}) {
			t.Fatalf("served %v after the edit", got)
		}
		run(t, w)
		o := openDrift(t, st, "acme")[0]
		if _, err := open().TrustListing(ctxT(t), "skills:acme", o.Listing); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the trust applied", func() bool {
			got, _, _ := seen.now()
			return slices.Equal(got, []string{"acme/count", "acme/greet"})
		})
	})
}

// TestWatcherApplyTrust: a Watcher that does not poll (Poll < 0) takes the
// heads from the process's one watch (trust.Ledger.Watch, shared with the
// toolset's ApplyTrust), and applies a trust made by another process.
func TestWatcherApplyTrust(t *testing.T) {
	stores(t, func(t *testing.T, open func() store.Store) {
		st := open()
		dir := acmePlugin(t)
		var seen watched
		opts := seen.options(dir)
		opts.Poll = -1
		w := skills.NewWatcher(st, opts)
		if err := w.Check(ctxT(t), nil, true); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "skills/greet/SKILL.md", trustSkillMD("greet", "Greet someone by name.", rugLine+"\n"))
		if err := w.Check(ctxT(t), nil, true); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctxT(t))
		done := make(chan error, 1)
		go func() { done <- trust.NewLedger(st, "watch", nil).Watch(ctx, 10*time.Millisecond, w.ApplyTrust) }()
		defer func() { cancel(); <-done }()
		o := openDrift(t, st, "acme")[0]
		if _, err := open().TrustListing(ctxT(t), "skills:acme", o.Listing); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the trust applied", func() bool {
			got, _, _ := seen.now()
			return slices.Equal(got, []string{"acme/count", "acme/greet"})
		})
	})
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
