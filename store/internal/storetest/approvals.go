package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

func approval(id, run, call, owner string) store.Approval {
	return store.Approval{ID: id, RecordKey: key(run, call), Server: "bank", Tool: "transfer",
		ArgsFingerprint: "args-" + call, Args: []byte(`{"amount":100,"to":"acct-` + call + `"}`),
		Reason: "tool description changed", Owner: owner, CreatedAt: at(0), ExpiresAt: at(24 * time.Hour)}
}

func testApprovals(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	_, err := s.GetApproval(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetApprovalByCall(ctx, key("r", "c"))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.DecideApproval(ctx, "nope", true, "op", at(time.Minute))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UseApproval(ctx, "nope", at(time.Minute))
	wantErr(t, err, store.ErrNotFound)
	for name, a := range map[string]store.Approval{
		"no ID":       approval("", "r", "c", "o"),
		"no run":      approval("x", "", "c", "o"),
		"no call":     approval("x", "r", "", "o"),
		"not pending": func() store.Approval { a := approval("x", "r", "c", "o"); a.State = store.ApprovalApproved; return a }(),
		"args not JSON": func() store.Approval {
			a := approval("x", "r", "c", "o")
			a.Args = []byte(`{"amount":`)
			return a
		}(),
		"expires when created": func() store.Approval { a := approval("x", "r", "c", "o"); a.ExpiresAt = a.CreatedAt; return a }(),
	} {
		if _, _, err := s.CreateApproval(ctx, a, 0); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: CreateApproval err = %v, want ErrInvalid", name, err)
		}
	}
	if _, _, err := s.CreateApproval(ctx, approval("x", "r", "c", "o"), -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("negative bound: CreateApproval err = %v, want ErrInvalid", err)
	}
	_, err = s.ListApprovals(ctx, "bogus")
	wantErr(t, err, store.ErrInvalid)

	a1 := approval("ap1", "r", "c1", "alice")
	a1.CallerKey = "order-17"
	got, created, err := s.CreateApproval(ctx, a1, 0)
	if err != nil || !created {
		t.Fatalf("CreateApproval = %v, %v", created, err)
	}
	if got.State != store.ApprovalPending || got.ID != "ap1" || !got.CreatedAt.Equal(at(0)) || !got.DecidedAt.IsZero() {
		t.Fatalf("created = %+v", got)
	}
	// Read back: the arguments as sent, the caller's key, the expiry.
	rb := get(s.GetApproval(ctx, "ap1")).ok(t)
	if string(rb.Args) != string(a1.Args) || rb.CallerKey != "order-17" || !rb.ExpiresAt.Equal(at(24*time.Hour)) ||
		!rb.UsedAt.IsZero() || len(rb.Decisions) != 0 {
		t.Fatalf("read back = %+v", rb)
	}
	// Idempotent on the call key while live, even under another ID.
	again := approval("ap1-retry", "r", "c1", "alice")
	again.Reason = "other"
	got2, created, err := s.CreateApproval(ctx, again, 0)
	if err != nil || created || got2.ID != "ap1" || got2.Reason != a1.Reason {
		t.Fatalf("repeat CreateApproval = %+v, %v, %v", got2, created, err)
	}
	// The same ID for another call is a conflict.
	_, _, err = s.CreateApproval(ctx, approval("ap1", "r", "c9", "alice"), 0)
	wantErr(t, err, store.ErrConflict)

	a2 := approval("ap2", "r", "c2", "bob")
	a2.CreatedAt = at(time.Second)
	a2.Args = nil // recorded without arguments: reads back as nil
	get3(s.CreateApproval(ctx, a2, 0)).ok(t)
	byCall := get(s.GetApprovalByCall(ctx, key("r", "c2"))).ok(t)
	if byCall.ID != "ap2" || byCall.Owner != "bob" || byCall.Server != "bank" || byCall.Tool != "transfer" ||
		byCall.ArgsFingerprint != "args-c2" || byCall.Args != nil {
		t.Fatalf("GetApprovalByCall = %+v", byCall)
	}
	pending := get(s.ListApprovals(ctx, store.ApprovalPending)).ok(t)
	if len(pending) != 2 || pending[0].ID != "ap1" || pending[1].ID != "ap2" || string(pending[0].Args) != string(a1.Args) {
		t.Fatalf("pending = %+v", pending)
	}
	_, err = s.DecideApproval(ctx, "ap1", true, "", at(time.Minute))
	wantErr(t, err, store.ErrInvalid) // a decision names its decider
	_, err = s.UseApproval(ctx, "ap1", at(time.Minute))
	wantErr(t, err, store.ErrNotApproved) // pending: nothing to use
	dec := get(s.DecideApproval(ctx, "ap1", true, "operator", at(time.Minute))).ok(t)
	want := []store.Decision{{Verdict: store.ApprovalApproved, By: "operator", At: at(time.Minute)}}
	if dec.State != store.ApprovalApproved || dec.DecidedBy != "operator" || !dec.DecidedAt.Equal(at(time.Minute)) || !decisionsEqual(dec.Decisions, want) {
		t.Fatalf("decided = %+v", dec)
	}
	_, err = s.DecideApproval(ctx, "ap1", false, "someone", at(2*time.Minute))
	wantErr(t, err, store.ErrAlreadyDecided)
	if g := get(s.GetApproval(ctx, "ap1")).ok(t); g.State != store.ApprovalApproved || g.DecidedBy != "operator" || !decisionsEqual(g.Decisions, want) {
		t.Fatalf("second decision changed the approval: %+v", g)
	}
	den := get(s.DecideApproval(ctx, "ap2", false, "operator", at(time.Minute))).ok(t)
	if den.State != store.ApprovalDenied || len(den.Decisions) != 1 || den.Decisions[0].Verdict != store.ApprovalDenied {
		t.Fatalf("denied = %+v", den)
	}
	_, err = s.UseApproval(ctx, "ap2", at(2*time.Minute))
	wantErr(t, err, store.ErrNotApproved)
	for state, want := range map[store.ApprovalState][]string{
		store.ApprovalPending: nil, store.ApprovalApproved: {"ap1"}, store.ApprovalDenied: {"ap2"}, "": {"ap1", "ap2"},
	} {
		var ids []string
		for _, a := range get(s.ListApprovals(ctx, state)).ok(t) {
			ids = append(ids, a.ID)
			if len(a.Decisions) != 1 || a.Decisions[0].By != "operator" {
				t.Errorf("ListApprovals(%q): %s has decisions %+v", state, a.ID, a.Decisions)
			}
		}
		if !slices.Equal(ids, want) {
			t.Errorf("ListApprovals(%q) = %v, want %v", state, ids, want)
		}
	}
	// Creating again after the decision returns the decided approval:
	// approved and denied ones are live until used or expired.
	got3, created, err := s.CreateApproval(ctx, approval("ap1-b", "r", "c1", "alice"), 0)
	if err != nil || created || got3.ID != "ap1" || got3.State != store.ApprovalApproved {
		t.Fatalf("CreateApproval after decision = %+v, %v, %v", got3, created, err)
	}
}

func decisionsEqual(a, b []store.Decision) bool {
	return slices.EqualFunc(a, b, func(x, y store.Decision) bool {
		return x.Verdict == y.Verdict && x.By == y.By && x.At.Equal(y.At)
	})
}

// testApprovalOnce: an approval authorizes one execution. Once used it
// never authorizes again, and the same call must ask anew.
func testApprovalOnce(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	get3(s.CreateApproval(ctx, approval("ap", "r", "c", "alice"), 0)).ok(t)
	get(s.DecideApproval(ctx, "ap", true, "ops", at(time.Minute))).ok(t)
	used := get(s.UseApproval(ctx, "ap", at(2*time.Minute))).ok(t)
	if used.State != store.ApprovalUsed || !used.UsedAt.Equal(at(2*time.Minute)) || len(used.Decisions) != 1 {
		t.Fatalf("used = %+v", used)
	}
	_, err := s.UseApproval(ctx, "ap", at(3*time.Minute))
	wantErr(t, err, store.ErrNotApproved) // spent once
	_, err = s.DecideApproval(ctx, "ap", true, "ops", at(3*time.Minute))
	wantErr(t, err, store.ErrAlreadyDecided)
	// A used approval is not the call's any more: asking again creates a
	// new, pending one (under a new ID; the used ID stays taken).
	_, err = s.GetApprovalByCall(ctx, key("r", "c"))
	wantErr(t, err, store.ErrNotFound)
	_, _, err = s.CreateApproval(ctx, approval("ap", "r", "c", "alice"), 0)
	wantErr(t, err, store.ErrConflict)
	next := approval("ap-2", "r", "c", "alice")
	next.CreatedAt = at(4 * time.Minute)
	n, created, err := s.CreateApproval(ctx, next, 0)
	if err != nil || !created || n.State != store.ApprovalPending || n.ID != "ap-2" {
		t.Fatalf("ask again = %+v, %v, %v", n, created, err)
	}
	if old := get(s.GetApproval(ctx, "ap")).ok(t); old.State != store.ApprovalUsed {
		t.Fatalf("the used approval changed: %+v", old)
	}
	_, err = s.UseApproval(ctx, "ap-2", at(5*time.Minute))
	wantErr(t, err, store.ErrNotApproved)

	// Many processes racing to spend one approval: exactly one wins.
	get3(s.CreateApproval(ctx, approval("race", "r", "race", "alice"), 0)).ok(t)
	get(s.DecideApproval(ctx, "race", true, "ops", at(time.Minute))).ok(t)
	const k = 10
	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		wg.Go(func() { _, errs[i] = s.UseApproval(ctx, "race", at(2*time.Minute)) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, store.ErrNotApproved):
		default:
			t.Fatal(err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d uses of one approval won, want exactly 1", wins)
	}
}

// testApprovalExpiry: an expired approval can be neither decided nor used;
// the call asks again; the sweep deletes it with its decisions.
func testApprovalExpiry(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	p := approval("p", "r", "p", "alice")
	p.ExpiresAt = at(time.Hour)
	get3(s.CreateApproval(ctx, p, 0)).ok(t)
	_, err := s.DecideApproval(ctx, "p", true, "ops", at(time.Hour))
	wantErr(t, err, store.ErrExpired) // expires at the instant it names
	if g := get(s.GetApproval(ctx, "p")).ok(t); g.State != store.ApprovalPending || len(g.Decisions) != 0 {
		t.Fatalf("refused decision changed the approval: %+v", g)
	}

	a := approval("a", "r", "a", "alice")
	a.ExpiresAt = at(time.Hour)
	get3(s.CreateApproval(ctx, a, 0)).ok(t)
	get(s.DecideApproval(ctx, "a", true, "ops", at(30*time.Minute))).ok(t)
	_, err = s.UseApproval(ctx, "a", at(2*time.Hour))
	wantErr(t, err, store.ErrExpired)
	// Asked again after expiry: the old one is retired, a new one is pending.
	again := approval("a-2", "r", "a", "alice")
	again.CreatedAt = at(2 * time.Hour)
	again.ExpiresAt = at(3 * time.Hour)
	n, created, err := s.CreateApproval(ctx, again, 0)
	if err != nil || !created || n.ID != "a-2" {
		t.Fatalf("ask after expiry = %+v, %v, %v", n, created, err)
	}
	if old := get(s.GetApproval(ctx, "a")).ok(t); old.State != store.ApprovalExpired || len(old.Decisions) != 1 {
		t.Fatalf("expired approval = %+v", old)
	}
	if live := get(s.GetApprovalByCall(ctx, key("r", "a"))).ok(t); live.ID != "a-2" {
		t.Fatalf("live approval = %+v", live)
	}
	// Without expiry: never expires, never swept.
	forever := approval("f", "r", "f", "alice")
	forever.ExpiresAt = time.Time{}
	get3(s.CreateApproval(ctx, forever, 0)).ok(t)

	if n := get(s.SweepApprovals(ctx, at(time.Hour-time.Millisecond))).ok(t); n != 0 {
		t.Fatalf("early sweep deleted %d", n)
	}
	if n := get(s.SweepApprovals(ctx, at(time.Hour))).ok(t); n != 2 {
		t.Fatalf("sweep at 1h deleted %d, want 2 (p and a)", n)
	}
	for _, id := range []string{"p", "a"} {
		_, err := s.GetApproval(ctx, id)
		wantErr(t, err, store.ErrNotFound)
	}
	if n := get(s.SweepApprovals(ctx, at(1000*time.Hour))).ok(t); n != 1 {
		t.Fatalf("late sweep deleted %d, want 1 (a-2)", n)
	}
	get(s.GetApproval(ctx, "f")).ok(t)
}

// testApprovalBound: a subject's pending approvals are bounded, across
// concurrent creators.
func testApprovalBound(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	for i := range 3 {
		get3(s.CreateApproval(ctx, approval(fmt.Sprint("al", i), "r", fmt.Sprint("al", i), "alice"), 3)).ok(t)
	}
	_, _, err := s.CreateApproval(ctx, approval("al3", "r", "al3", "alice"), 3)
	wantErr(t, err, store.ErrTooManyPending)
	var le *store.PendingLimitError
	if !errors.As(err, &le) || le.Owner != "alice" || le.Max != 3 || !le.NextExpiry.Equal(at(24*time.Hour)) {
		t.Fatalf("limit error = %#v", err)
	}
	if _, err := s.GetApproval(ctx, "al3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused approval was written: %v", err)
	}
	// The bound is per subject; asking again for a pending call is no new
	// approval; 0 means unbounded.
	get3(s.CreateApproval(ctx, approval("bob0", "r", "bob0", "bob"), 3)).ok(t)
	if a, created, err := s.CreateApproval(ctx, approval("al0-b", "r", "al0", "alice"), 3); err != nil || created || a.ID != "al0" {
		t.Fatalf("repeat at the bound = %+v, %v, %v", a, created, err)
	}
	get3(s.CreateApproval(ctx, approval("al-unb", "r", "al-unb", "alice"), 0)).ok(t)
	// A decided one frees a place.
	get(s.DecideApproval(ctx, "al0", false, "ops", at(time.Minute))).ok(t)
	get(s.DecideApproval(ctx, "al-unb", false, "ops", at(time.Minute))).ok(t)
	get3(s.CreateApproval(ctx, approval("al4", "r", "al4", "alice"), 3)).ok(t)
	// Expired ones do not count.
	late := approval("al5", "r", "al5", "alice")
	late.CreatedAt, late.ExpiresAt = at(25*time.Hour), at(48*time.Hour)
	get3(s.CreateApproval(ctx, late, 3)).ok(t)

	// Concurrent creators for one subject: exactly the bound gets through.
	const k, bound = 12, 4
	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		wg.Go(func() {
			_, _, errs[i] = s.CreateApproval(ctx, approval(fmt.Sprint("c", i), "rc", fmt.Sprint("c", i), "carol"), bound)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrTooManyPending):
		default:
			t.Fatal(err)
		}
	}
	if n := len(get(s.ListApprovals(ctx, store.ApprovalPending)).ok(t)); ok != bound || n != 4+1+bound {
		t.Fatalf("%d concurrent creations got through (want %d); %d pending", ok, bound, n)
	}
}

// testApprovalCreateRace: concurrent askers for one call get one approval.
func testApprovalCreateRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	const k = 10
	var wg sync.WaitGroup
	ids := make([]string, k)
	errs := make([]error, k)
	for i := range k {
		wg.Go(func() {
			a, _, err := s.CreateApproval(ctx, approval(fmt.Sprint("ap", i), "r", "c", "alice"), 5)
			ids[i], errs[i] = a.ID, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		if ids[i] != ids[0] {
			t.Fatalf("concurrent askers got approvals %v", ids)
		}
	}
	if all := get(s.ListApprovals(ctx, "")).ok(t); len(all) != 1 {
		t.Fatalf("%d approvals for one call", len(all))
	}
}

func testApprovalRace(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	get3(s.CreateApproval(ctx, approval("ap", "r", "c", "alice"), 0)).ok(t)
	const n = 10
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.DecideApproval(ctx, "ap", i%2 == 0, fmt.Sprintf("op%d", i), at(time.Minute))
		})
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
			a := get(s.GetApproval(ctx, "ap")).ok(t)
			if a.DecidedBy != fmt.Sprintf("op%d", i) || (a.State == store.ApprovalApproved) != (i%2 == 0) || len(a.Decisions) != 1 {
				t.Fatalf("winner op%d but stored %+v", i, a)
			}
		case errors.Is(err, store.ErrAlreadyDecided):
		default:
			t.Fatal(err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d decisions won, want exactly 1", wins)
	}
}

// testApprovalContract: an approval keeps the contract of its tool it was
// asked under; SupersedeApproval retires a live one (pending, approved or
// denied, and one asked before contracts were stored) whose contract is
// not the call's, once, and never a used or expired one or one with the
// call's contract; the call then asks again.
func testApprovalContract(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	a := approval("ca", "r", "ca", "alice")
	a.Contract = "contract-A"
	if got := get3(s.CreateApproval(ctx, a, 0)).ok(t); got.Contract != "contract-A" {
		t.Fatalf("CreateApproval returned contract %q", got.Contract)
	}
	if g := get(s.GetApproval(ctx, "ca")).ok(t); g.Contract != "contract-A" {
		t.Fatalf("GetApproval contract %q", g.Contract)
	}
	if g := get(s.GetApprovalByCall(ctx, key("r", "ca"))).ok(t); g.Contract != "contract-A" {
		t.Fatalf("GetApprovalByCall contract %q", g.Contract)
	}
	for _, g := range get(s.ListApprovals(ctx, store.ApprovalPending)).ok(t) {
		if g.ID == "ca" && g.Contract != "contract-A" {
			t.Fatalf("ListApprovals contract %q", g.Contract)
		}
	}
	// The call's live approval is returned whatever contract the new
	// request names: telling them apart is the caller's (SupersedeApproval).
	other := approval("ca-x", "r", "ca", "alice")
	other.Contract = "contract-B"
	if g, created, err := s.CreateApproval(ctx, other, 0); err != nil || created || g.ID != "ca" || g.Contract != "contract-A" {
		t.Fatalf("CreateApproval with another contract = %+v, %v, %v", g, created, err)
	}

	_, err := s.SupersedeApproval(ctx, "nope", "contract-B")
	wantErr(t, err, store.ErrNotFound)
	if moved := get(s.SupersedeApproval(ctx, "ca", "contract-A")).ok(t); moved {
		t.Fatal("SupersedeApproval with the approval's own contract moved it")
	}
	if g := get(s.GetApproval(ctx, "ca")).ok(t); g.State != store.ApprovalPending {
		t.Fatalf("after a refused supersede: %+v", g)
	}
	if moved := get(s.SupersedeApproval(ctx, "ca", "contract-B")).ok(t); !moved {
		t.Fatal("SupersedeApproval with another contract did not move it")
	}
	if g := get(s.GetApproval(ctx, "ca")).ok(t); g.State != store.ApprovalExpired || g.Contract != "contract-A" {
		t.Fatalf("superseded approval = %+v", g)
	}
	_, err = s.GetApprovalByCall(ctx, key("r", "ca"))
	wantErr(t, err, store.ErrNotFound)
	_, err = s.DecideApproval(ctx, "ca", true, "ops", at(time.Minute))
	wantErr(t, err, store.ErrAlreadyDecided)
	if moved := get(s.SupersedeApproval(ctx, "ca", "contract-C")).ok(t); moved {
		t.Fatal("SupersedeApproval moved an expired approval")
	}
	// The call asks again, under its contract.
	if g, created, err := s.CreateApproval(ctx, other, 0); err != nil || !created || g.ID != "ca-x" || g.Contract != "contract-B" {
		t.Fatalf("ask again = %+v, %v, %v", g, created, err)
	}
	if g := get(s.GetApprovalByCall(ctx, key("r", "ca"))).ok(t); g.ID != "ca-x" || g.Contract != "contract-B" {
		t.Fatalf("live approval after asking again = %+v", g)
	}

	// Approved and denied ones are superseded too; a superseded approved
	// one authorizes nothing.
	for _, approve := range []bool{true, false} {
		id := fmt.Sprint("cd-", approve)
		d := approval(id, "r", id, "alice")
		d.Contract = "contract-A"
		get3(s.CreateApproval(ctx, d, 0)).ok(t)
		get(s.DecideApproval(ctx, id, approve, "ops", at(time.Minute))).ok(t)
		if moved := get(s.SupersedeApproval(ctx, id, "contract-B")).ok(t); !moved {
			t.Fatalf("%s: decided approval not superseded", id)
		}
		g := get(s.GetApproval(ctx, id)).ok(t)
		if g.State != store.ApprovalExpired || len(g.Decisions) != 1 {
			t.Fatalf("%s: superseded = %+v", id, g)
		}
		_, err := s.UseApproval(ctx, id, at(2*time.Minute))
		wantErr(t, err, store.ErrNotApproved)
	}
	// One asked before contracts were stored ("") has another contract
	// than any the call names.
	old := approval("c-old", "r", "c-old", "alice")
	get3(s.CreateApproval(ctx, old, 0)).ok(t)
	if g := get(s.GetApproval(ctx, "c-old")).ok(t); g.Contract != "" {
		t.Fatalf("approval without a contract reads back %q", g.Contract)
	}
	if moved := get(s.SupersedeApproval(ctx, "c-old", "contract-A")).ok(t); !moved {
		t.Fatal("approval without a contract not superseded")
	}
	// A used approval stays used.
	u := approval("c-used", "r", "c-used", "alice")
	u.Contract = "contract-A"
	get3(s.CreateApproval(ctx, u, 0)).ok(t)
	get(s.DecideApproval(ctx, "c-used", true, "ops", at(time.Minute))).ok(t)
	get(s.UseApproval(ctx, "c-used", at(2*time.Minute))).ok(t)
	if moved := get(s.SupersedeApproval(ctx, "c-used", "contract-B")).ok(t); moved {
		t.Fatal("used approval superseded")
	}
	if g := get(s.GetApproval(ctx, "c-used")).ok(t); g.State != store.ApprovalUsed {
		t.Fatalf("used approval after supersede = %+v", g)
	}

	// Concurrent supersedes of one approval: exactly one moves it.
	r := approval("c-race", "r", "c-race", "alice")
	r.Contract = "contract-A"
	get3(s.CreateApproval(ctx, r, 0)).ok(t)
	get(s.DecideApproval(ctx, "c-race", true, "ops", at(time.Minute))).ok(t)
	const n = 8
	moved := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { moved[i], errs[i] = s.SupersedeApproval(ctx, "c-race", "contract-B") })
	}
	wg.Wait()
	wins := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent supersede: %v", errs[i])
		}
		if moved[i] {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d concurrent supersedes moved the approval, want 1", wins)
	}
}
