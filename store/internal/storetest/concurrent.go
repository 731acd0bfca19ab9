package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Concurrent runs every store operation the toolset and the gateway use,
// from many goroutines at once, on s, and checks what each wrote reads
// back. Run it on a store opened with the smallest pool the store supports
// (store.Options.MaxConns 1): there a store method that holds one of the
// pool's connections while it waits for another (a result set open while
// it runs a second statement, a pool read inside a transaction) waits for
// ever, and every round's deadline (60 s, far above what one takes even
// on a loaded machine)
// turns that into a failure naming the operation, instead of a hung test.
//
// Each worker plays a server connecting and a gateway serving it: the
// server row, its baseline and drift observations (a first listing, a
// changed one, a trust), keyed calls through the journal with their
// audit entries, a rate-limit counter, an approval asked, decided and
// used, a connection and a connect flow, and the executor registry; the
// operator's reads (lists and heads) run among them.
func Concurrent(t *testing.T, s store.Store) {
	t.Helper()
	const workers, rounds = 24, 3
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				if err := concurrentRound(s, w, r); err != nil {
					errs <- fmt.Errorf("worker %d, round %d: %w", w, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d workers x %d rounds in %v", workers, rounds, time.Since(start).Round(time.Millisecond))

	// What every worker wrote, read back by one reader.
	ctx := ctxT(t)
	servers := get(s.ListServers(ctx)).ok(t)
	if len(servers) != workers {
		t.Fatalf("ListServers: %d rows, want %d", len(servers), workers)
	}
	if got := get(s.GetCounter(ctx, "cc-limit", time.Now())).ok(t); got != workers*rounds {
		t.Fatalf("counter = %d, want %d (an increment was lost or doubled)", got, workers*rounds)
	}
	runs := get(s.ListRuns(ctx, store.RunFilter{AnyOwner: true})).ok(t)
	calls := int64(0)
	for _, r := range runs {
		if r.Started != 0 || r.InDoubt != 0 {
			t.Errorf("run %s: %d started, %d in doubt after every call completed", r.RunID, r.Started, r.InDoubt)
		}
		calls += r.Calls
	}
	if calls != workers*rounds {
		t.Fatalf("journal holds %d calls, want %d", calls, workers*rounds)
	}
	heads := get(s.AuditHeads(ctx)).ok(t)
	entries := int64(0)
	for _, h := range heads {
		entries += h.Entries
	}
	if entries != workers*rounds {
		t.Fatalf("audit trail holds %d entries, want %d", entries, workers*rounds)
	}
}

// concurrentRound is one worker's round (see Concurrent); round r of
// worker w.
func concurrentRound(s store.Store, w, r int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	step := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	id := fmt.Sprintf("cc/s%02d", w)
	now := time.Now()

	// A server connecting: its row, its baseline, its listing judged.
	if _, err := s.GetServer(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return step("GetServer", err)
	}
	if err := step("PutServer", s.PutServer(ctx, store.Server{ID: id, Name: id, Type: "stdio", Catalogue: []byte(`[{"name":"echo"}]`)})); err != nil {
		return err
	}
	b := store.Baseline{}
	for i := range 12 {
		b[tool(fmt.Sprintf("t%02d", i))] = store.BaselineEntry{Value: fmt.Sprintf("v%d", i), Contract: []byte("c")}
	}
	if _, err := s.SaveBaseline(ctx, id, b); err != nil {
		return step("SaveBaseline", err)
	}
	got, err := s.GetBaseline(ctx, id)
	if err != nil {
		return step("GetBaseline", err)
	}
	if len(got) < len(b) {
		return fmt.Errorf("GetBaseline: %d entries, want at least %d", len(got), len(b))
	}
	version, err := s.BaselineVersion(ctx, id)
	if err != nil {
		return step("BaselineVersion", err)
	}
	if _, err := s.OpenObservations(ctx, id, true); err != nil {
		return step("OpenObservations", err)
	}
	listing := fmt.Sprintf("listing-%d-%d", w, r)
	o, _, err := s.ObserveListing(ctx, store.Observation{ServerID: id, Listing: listing, BaselineVersion: version, SeenBy: "cc", Entries: b, Drifted: true, Changes: []byte(`[]`)})
	if err != nil {
		return step("ObserveListing", err)
	}
	if _, err := s.GetObservation(ctx, o.ID); err != nil {
		return step("GetObservation", err)
	}
	if _, err := s.OpenObservations(ctx, "", false); err != nil {
		return step("OpenObservations(all)", err)
	}
	if _, err := s.TrustListing(ctx, id, listing); err != nil {
		return step("TrustListing", err) // the worker's own server: no one else moves its version
	}
	if v, err := s.BaselineVersion(ctx, id); err != nil || v <= version {
		return fmt.Errorf("BaselineVersion after a trust: %d (before %d), %v", v, version, err)
	}
	if _, err := s.DriftHeads(ctx); err != nil {
		return step("DriftHeads", err)
	}
	if _, err := s.ListServers(ctx); err != nil {
		return step("ListServers", err)
	}

	// The executor registry, as a gateway's start does.
	exID := fmt.Sprintf("cc-%02d#%d", w, r)
	if err := step("RegisterExecutor", s.RegisterExecutor(ctx, store.Executor{ID: exID, Instance: fmt.Sprintf("cc-%02d", w), AliveUntil: now.Add(time.Minute)})); err != nil {
		return err
	}
	if err := step("HeartbeatExecutor", s.HeartbeatExecutor(ctx, exID, now.Add(2*time.Minute))); err != nil {
		return err
	}
	if _, err := s.GetExecutor(ctx, exID); err != nil {
		return step("GetExecutor", err)
	}

	// A keyed call: claim, renew, complete with its audit entry, read back.
	key := store.RecordKey{Scope: "cc", RunID: fmt.Sprintf("run-%02d", w), ToolCallID: fmt.Sprintf("call-%d", r)}
	claimed, _, err := s.Claim(ctx, store.Record{RecordKey: key, Fingerprint: "fp", Owner: "cc", Executor: exID,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		return step("Claim", err)
	}
	if !claimed {
		return fmt.Errorf("the claim of %v was not taken, and no one else claims it", key)
	}
	if err := step("RenewLease", s.RenewLease(ctx, key, exID, now.Add(2*time.Minute))); err != nil {
		return err
	}
	if _, err := s.MarkInDoubtFromDead(ctx, key, "nobody#0", now); err != nil {
		return step("MarkInDoubtFromDead", err)
	}
	entry := store.AuditEntry{Chain: fmt.Sprintf("cc-%02d", w), At: now, Kind: "call", Subject: "alice", Server: id, Tool: "echo",
		ArgsDigest: "d", Outcome: "ok", Duration: time.Millisecond, Instance: "cc"}
	if aj, ok := s.(store.AuditJournalStore); ok {
		if _, err := aj.CompleteAudited(ctx, key, exID, store.StateSucceeded, []byte(`{"ok":true}`), entry, concurrentLink); err != nil {
			return step("CompleteAudited", err)
		}
	} else {
		if err := step("Complete", s.Complete(ctx, key, exID, store.StateSucceeded, []byte(`{"ok":true}`))); err != nil {
			return err
		}
		head, err := s.AuditHead(ctx, entry.Chain)
		if err != nil {
			return step("AuditHead", err)
		}
		if err := step("AppendAudit", s.AppendAudit(ctx, []store.AuditEntry{concurrentLink(entry, head)})); err != nil {
			return err
		}
	}
	rec, err := s.GetRecord(ctx, key)
	if err != nil {
		return step("GetRecord", err)
	}
	if rec.State != store.StateSucceeded {
		return fmt.Errorf("GetRecord of %v: state %s, want succeeded", key, rec.State)
	}
	if _, err := s.ListRecords(ctx, key.Scope, key.RunID); err != nil {
		return step("ListRecords", err)
	}
	if _, err := s.ListRuns(ctx, store.RunFilter{AnyOwner: true, Limit: 10}); err != nil {
		return step("ListRuns", err)
	}
	if _, err := s.OldestStarted(ctx); err != nil {
		return step("OldestStarted", err)
	}
	if _, err := s.IncrBy(ctx, "cc-limit", 1, now.Add(time.Hour)); err != nil {
		return step("IncrBy", err)
	}
	if _, err := s.GetCounter(ctx, "cc-limit", now); err != nil {
		return step("GetCounter", err)
	}

	// An approval asked, listed, decided and used.
	akey := store.RecordKey{Scope: "cc", RunID: fmt.Sprintf("ask-%02d", w), ToolCallID: fmt.Sprintf("call-%d", r)}
	a, _, err := s.CreateApproval(ctx, store.Approval{ID: fmt.Sprintf("ap-%02d-%d", w, r), RecordKey: akey, Server: id, Tool: "echo",
		ArgsFingerprint: "fp", Owner: "cc", State: store.ApprovalPending, ExpiresAt: now.Add(time.Hour)}, 0)
	if err != nil {
		return step("CreateApproval", err)
	}
	if _, err := s.GetApprovalByCall(ctx, akey); err != nil {
		return step("GetApprovalByCall", err)
	}
	if _, err := s.ListApprovals(ctx, store.ApprovalPending); err != nil {
		return step("ListApprovals", err)
	}
	if _, err := s.DecideApproval(ctx, a.ID, true, "op@cc", now); err != nil {
		return step("DecideApproval", err)
	}
	if _, err := s.UseApproval(ctx, a.ID, now); err != nil {
		return step("UseApproval", err)
	}
	if _, err := s.GetApproval(ctx, a.ID); err != nil {
		return step("GetApproval", err)
	}

	// The token vault: a connection, its refresh lease, a connect flow.
	subject := fmt.Sprintf("user-%02d", w)
	if err := step("PutConnection", s.PutConnection(ctx, store.Connection{Server: id, Subject: subject, Sealed: []byte("sealed"), KeyID: "k1"})); err != nil {
		return err
	}
	if _, ok, err := s.Connection(ctx, id, subject); err != nil || !ok {
		return fmt.Errorf("reading the connection back: found %v, %w", ok, err)
	}
	if _, err := s.LeaseRefresh(ctx, id, subject, "cc", now.Add(time.Minute)); err != nil {
		return step("LeaseRefresh", err)
	}
	if _, err := s.Connections(ctx, ""); err != nil {
		return step("Connections", err)
	}
	flow := fmt.Sprintf("flow-%02d-%d", w, r)
	if err := step("PutConnectFlow", s.PutConnectFlow(ctx, store.ConnectFlow{ID: flow, Server: id, Subject: subject, Sealed: []byte("s"), ExpiresAt: now.Add(time.Minute)})); err != nil {
		return err
	}
	if _, ok, err := s.TakeConnectFlow(ctx, flow, now); err != nil || !ok {
		return fmt.Errorf("TakeConnectFlow: found %v, %w", ok, err)
	}

	// The operator's reads, and the sweeps, among the writers.
	if _, err := s.AuditHeads(ctx); err != nil {
		return step("AuditHeads", err)
	}
	if _, err := s.ReadAuditChain(ctx, entry.Chain, 0, 0); err != nil {
		return step("ReadAuditChain", err)
	}
	if _, err := s.ListAudit(ctx, store.AuditFilter{Chain: entry.Chain}); err != nil {
		return step("ListAudit", err)
	}
	if _, err := s.AuditCheckpoints(ctx, ""); err != nil {
		return step("AuditCheckpoints", err)
	}
	for what, sweep := range map[string]func() (int64, error){
		"Sweep":             func() (int64, error) { return s.Sweep(ctx, now.Add(-time.Hour)) },
		"SweepCounters":     func() (int64, error) { return s.SweepCounters(ctx, now.Add(-time.Hour)) },
		"SweepApprovals":    func() (int64, error) { return s.SweepApprovals(ctx, now.Add(-time.Hour)) },
		"SweepExecutors":    func() (int64, error) { return s.SweepExecutors(ctx, now.Add(-time.Hour)) },
		"SweepConnectFlows": func() (int64, error) { return s.SweepConnectFlows(ctx, now.Add(-time.Hour)) },
	} {
		if _, err := sweep(); err != nil {
			return step(what, err)
		}
	}
	return step("StopExecutor", s.StopExecutor(ctx, exID, now))
}

// concurrentLink links an entry to its chain's head with made-up hashes.
func concurrentLink(e store.AuditEntry, head store.AuditHead) store.AuditEntry {
	e.Seq, e.PrevHash = head.Last+1, head.Hash
	e.Hash = fmt.Sprintf("h-%s-%d", e.Chain, e.Seq)
	return e
}
