package trust

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust/internal/judge"
	"github.com/gatehouse-dev/gatehouse/trust/internal/stored"
)

// A Ledger is one process's hand on the trust state of what servers
// publish: it judges a listing against the server's baseline, records what
// this instance observed, enforces what other instances observed, wakes a
// server from its stored catalogue and re-trusts one. It keeps no state of
// its own beyond its store; it is safe for concurrent use, and a caller
// serializes the judging of one server (a toolset does, per server).
type Ledger struct {
	st       Store
	instance string
	log      *slog.Logger
}

// NewLedger returns a Ledger over st that records observations under the
// name instance (store.Observation.SeenBy). A nil st is trust state kept
// in this process for the Ledger's life (an in-memory store): nothing is
// shared, and everything is first sight again in the next process. A nil
// log discards.
func NewLedger(st Store, instance string, log *slog.Logger) *Ledger {
	if st == nil {
		st = inProcess()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ledger{st: st, instance: instance, log: log}
}

// Server names a server whose listings a Ledger judges: its store row ID,
// its configured name, its configuration (the row keeps its transport type
// and URL, never a credential) and InCode, set when it is reached through a
// transport of the caller's (its row's type is then "internal" when the
// configuration names none).
type Server struct {
	ID, Name string
	Config   plugin.ServerConfig
	InCode   bool
}

func (s Server) row(catalogue []byte) store.Server {
	return stored.Row(s.ID, s.Name, s.Config, s.InCode, catalogue)
}

// Judged is a listing as judged: its tools (as published, or as stored on a
// wake), its prints and their fingerprint, the verdict, the baseline
// version it was judged against and the highest drift observation applied.
type Judged struct {
	Tools    []*mcp.Tool
	Prints   Prints
	Print    string
	Verdict  Verdict
	Version  int64
	Observed int64
}

// Record applies a fresh listing p of s (fp its prints): it reads the
// server's row and baseline, records the baseline on first sight (or
// derives it from a row's stored catalogue when the row predates
// baselines), stores the catalogue when it changed, judges the listing
// against the stored baseline, records this instance's observation when it
// drifted (or returned to the baseline) and enforces the fleet's record. A
// store failure is an error: a server that cannot be checked is not to be
// exposed.
func (l *Ledger) Record(ctx context.Context, s Server, p Listing, fp Prints) (Judged, error) {
	st := l.st
	catalogue, err := stored.EncodeCatalogue(p.Tools, fp.Tools)
	if err != nil {
		return Judged{}, fmt.Errorf("encoding the catalogue: %w", err)
	}
	row := s.row(catalogue)
	old, err := st.GetServer(ctx, s.ID)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Judged{}, err
	}
	var version int64
	var baseline store.Baseline
	if found {
		if version, baseline, err = readBaseline(ctx, st, s.ID); err != nil {
			return Judged{}, err
		}
	}
	var seed store.Baseline
	if len(baseline) == 0 {
		// No baseline: first sight (a row with a catalogue predates
		// baselines: judge.FirstSight).
		var catalogue []byte
		if found {
			catalogue = old.Catalogue
		}
		seed = judge.FirstSight(s.Name, fp, catalogue)
		if !found { // the baseline's row must exist first
			if err := st.PutServer(ctx, row); err != nil {
				return Judged{}, err
			}
		}
	} else {
		// A baseline from before the instructions, prompts or resource
		// templates were pinned: pin them now (first sight for them).
		seed = judge.Seed(fp, baseline)
	}
	if len(seed) > 0 {
		if _, err := st.SaveBaseline(ctx, s.ID, seed); err != nil {
			return Judged{}, err
		}
		// Re-read: another process may have recorded first (saving is
		// insert-only, so what is stored is what counts).
		if version, baseline, err = readBaseline(ctx, st, s.ID); err != nil {
			return Judged{}, err
		}
	}
	if found && (!bytes.Equal(old.Catalogue, row.Catalogue) || old.Name != row.Name || old.Type != row.Type || old.URL != row.URL) {
		if err := st.PutServer(ctx, row); err != nil {
			return Judged{}, err
		}
	}
	tb, err := stored.ParseBaseline(baseline)
	if err != nil {
		return Judged{}, err
	}
	j := Judged{Tools: p.Tools, Prints: fp, Version: version, Print: fp.Print()}
	j.Verdict = judge.Judge(s.Name, fp, tb, len(baseline) > 0)
	if err := l.observe(ctx, s, &j, baseline); err != nil {
		return Judged{}, err
	}
	if found && old.Type != "" && (old.Type != row.Type || old.URL != row.URL) {
		l.log.Info("toolset: server row updated to the configured transport", "server", s.Name, "id", s.ID)
	}
	return j, nil
}

// observe records this instance's observation of a judged listing when it
// drifted (or when this instance's last open observation drifted and this
// one does not: a return to the baseline), and applies the drift other
// instances recorded (judge.Enforce). It moves j.Observed.
func (l *Ledger) observe(ctx context.Context, s Server, j *Judged, baseline store.Baseline) error {
	obs, err := l.st.OpenObservations(ctx, s.ID, false)
	if err != nil {
		return fmt.Errorf("reading the recorded drift: %w", err)
	}
	var mine *store.Observation
	for i := range obs {
		j.Observed = max(j.Observed, obs[i].ID)
		if obs[i].SeenBy == l.instance && obs[i].BaselineVersion == j.Version {
			mine = &obs[i]
		}
	}
	drifted := j.Verdict.Drifted()
	if (drifted || mine != nil && mine.Drifted) && (mine == nil || mine.Listing != j.Print) {
		changes, err := json.Marshal(judge.Changes(j.Prints, baseline, j.Verdict))
		if err != nil {
			return fmt.Errorf("encoding the drift: %w", err)
		}
		o, _, err := l.st.ObserveListing(ctx, store.Observation{ServerID: s.ID, Listing: j.Print, BaselineVersion: j.Version,
			SeenBy: l.instance, Entries: judge.Entries(j.Prints), Changes: changes, Drifted: drifted})
		if err != nil {
			return fmt.Errorf("recording the drift: %w", err)
		}
		j.Observed = max(j.Observed, o.ID)
	}
	l.enforce(s, &j.Verdict, obs)
	return nil
}

// enforce applies the drift other instances recorded. A damaged record is
// logged: the others still apply, and it is no reason to serve less
// safely, nor to stop serving.
func (l *Ledger) enforce(s Server, v *Verdict, obs []store.Observation) {
	if _, err := judge.Enforce(s.Name, l.instance, v, obs); err != nil {
		l.log.Warn("toolset: recorded drift", "server", s.Name, "err", err)
	}
}

// Rejudge judges cur, the last judged listing of s, again against the
// stored baseline and the fleet's record (a trust made elsewhere, drift
// another instance observed). head is the server's highest observation ID
// as polled (Heads): every observation up to it is open, and so read here,
// or closed. changed says the decisions differ from cur's (or the baseline
// moved); when they do not, next is cur with Observed moved up. A server
// without a row or with an empty baseline (a re-trust in progress) is left
// as it is.
func (l *Ledger) Rejudge(ctx context.Context, s Server, cur Judged, head int64) (next Judged, changed bool, err error) {
	version, baseline, err := readBaseline(ctx, l.st, s.ID)
	if errors.Is(err, store.ErrNotFound) {
		return cur, false, nil
	}
	if err != nil {
		return cur, false, err
	}
	if len(baseline) == 0 {
		return cur, false, nil // a re-trust in progress: cleared, not yet recorded
	}
	tb, err := stored.ParseBaseline(baseline)
	if err != nil {
		return cur, false, err
	}
	j := Judged{Tools: cur.Tools, Prints: cur.Prints, Print: cur.Print, Version: version}
	j.Verdict = judge.Judge(s.Name, cur.Prints, tb, true)
	if err := l.observe(ctx, s, &j, baseline); err != nil {
		return cur, false, err
	}
	j.Observed = max(j.Observed, head)
	if version == cur.Version && j.Verdict.Same(&cur.Verdict) {
		// Nothing decided differently (the observations that moved were
		// this instance's own, or change nothing here).
		cur.Observed = max(cur.Observed, j.Observed)
		return cur, false, nil
	}
	if version != cur.Version {
		l.log.Info("toolset: trust baseline changed in the store; re-applied", "server", s.Name, "version", version)
	}
	return j, true, nil
}

// Wake judges s from its stored row: no connection, no request. It reads
// the store and writes nothing; what other instances observed is enforced
// from the first moment. err says why s cannot be woken (no row, a row of
// another transport, a damaged baseline, a store failure), worded to
// follow "server NAME is skipped: ". dropped, when not nil, says the stored
// catalogue was dropped: j then has no tools, only the baseline's pins.
func (l *Ledger) Wake(ctx context.Context, s Server) (j Judged, dropped, err error) {
	row, err := l.st.GetServer(ctx, s.ID)
	if errors.Is(err, store.ErrNotFound) {
		return Judged{}, nil, fmt.Errorf("the store has no row %q to wake it from, and a wake never falls back to connecting; connect it once without waking (for example `gatehouse tools --store DSN`) to record it", s.ID)
	}
	if err != nil {
		return Judged{}, nil, fmt.Errorf("reading its row %q from the store: %w", s.ID, err)
	}
	if want := s.row(nil); row.Type != want.Type || row.URL != want.URL {
		return Judged{}, nil, fmt.Errorf("its stored row %q (type %q, URL %q) does not match the configuration (type %q, URL %q); the row is refused: connect the server without waking to record it again",
			s.ID, row.Type, row.URL, want.Type, want.URL)
	}
	version, baseline, err := readBaseline(ctx, l.st, s.ID)
	if err != nil {
		return Judged{}, nil, fmt.Errorf("reading its trust baseline: %w", err)
	}
	tb, err := stored.ParseBaseline(baseline)
	if err != nil {
		return Judged{}, nil, fmt.Errorf("its trust baseline is damaged: %w", err)
	}
	j = Judged{Version: version}
	tools, fp, v, derr := judge.Woken(s.Name, row.Catalogue, tb, len(baseline) > 0)
	j.Verdict = v
	if derr != nil {
		return j, derr, nil
	}
	j.Tools, j.Prints, j.Print = tools, fp, fp.Print()
	obs, err := l.st.OpenObservations(ctx, s.ID, false)
	if err != nil {
		return Judged{}, nil, fmt.Errorf("reading the recorded drift: %w", err)
	}
	for _, o := range obs {
		j.Observed = max(j.Observed, o.ID)
	}
	l.enforce(s, &j.Verdict, obs)
	return j, nil, nil
}

// Retrust makes the listing p of s (fp its prints) the server's trusted
// baseline: it stores the catalogue, then replaces the baseline in one
// store transaction. The record lists what it accepted: this listing
// against the baseline it replaced (none when that was empty or damaged).
// Every instance notices the new baseline version (Heads) and re-judges.
func (l *Ledger) Retrust(ctx context.Context, s Server, p Listing, fp Prints) (TrustRecord, error) {
	catalogue, err := stored.EncodeCatalogue(p.Tools, fp.Tools)
	if err != nil {
		return TrustRecord{}, err
	}
	if err := l.st.PutServer(ctx, s.row(catalogue)); err != nil {
		return TrustRecord{}, err
	}
	_, old, err := readBaseline(ctx, l.st, s.ID)
	if err != nil {
		return TrustRecord{}, err
	}
	changes := []pin.Change{}
	if tb, err := stored.ParseBaseline(old); err == nil && len(old) > 0 {
		changes = judge.Changes(fp, old, judge.Judge(s.Name, fp, tb, true))
	}
	cleared, err := l.st.ReplaceBaseline(ctx, s.ID, judge.Entries(fp))
	if err != nil {
		return TrustRecord{}, err
	}
	return judge.Record(s.ID, s.Name, cleared, p.Instructions, fp, changes), nil
}

// ObserveSession judges the listing of a session of s other than the one
// its listings come from (fp its prints) against the stored baseline, and
// records its drift as observed by seenBy. quarantines says the listing
// publishes a trusted name with another contract; head is the
// observation's ID (0 when nothing was recorded). A server without a
// baseline quarantines: there is nothing to judge the session against.
func (l *Ledger) ObserveSession(ctx context.Context, s Server, fp Prints, seenBy string) (quarantines bool, head int64, err error) {
	version, baseline, err := readBaseline(ctx, l.st, s.ID)
	if err != nil {
		return true, 0, err
	}
	if len(baseline) == 0 {
		return true, 0, errors.New("the server has no trusted baseline to judge it against")
	}
	tb, err := stored.ParseBaseline(baseline)
	if err != nil {
		return true, 0, err
	}
	v := judge.Judge(s.Name, fp, tb, true)
	for _, ev := range v.Events {
		l.log.Warn("toolset: tool drift on a session of its own", "server", s.Name, "message", ev.Message)
	}
	if !v.Drifted() {
		return v.Quarantines(), 0, nil // nothing an operator could trust (a name published twice)
	}
	changes, err := json.Marshal(judge.Changes(fp, baseline, v))
	if err != nil {
		return true, 0, fmt.Errorf("encoding the drift: %w", err)
	}
	o, _, err := l.st.ObserveListing(ctx, store.Observation{ServerID: s.ID, Listing: fp.Print(), BaselineVersion: version,
		SeenBy: seenBy, Entries: judge.Entries(fp), Changes: changes, Drifted: true})
	if err != nil {
		return true, 0, fmt.Errorf("recording the drift: %w", err)
	}
	return v.Quarantines(), o.ID, nil
}

// Heads reads the trust state's digest of every row (its baseline version
// and latest observation), by row ID, in one store query: what a watcher
// polls to notice a trust or another instance's drift.
func (l *Ledger) Heads(ctx context.Context) (map[string]store.DriftHead, error) {
	heads, err := l.st.DriftHeads(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]store.DriftHead, len(heads))
	for _, h := range heads {
		byID[h.ServerID] = h
	}
	return byID, nil
}
