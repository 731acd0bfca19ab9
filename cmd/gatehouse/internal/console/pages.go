package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// pageNames are the templates under templates/, each parsed with the
// layout.
var pageNames = []string{"login", "approvals", "drift", "runs", "servers", "audit", "verify"}

// parsePages parses every page with the layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"visible": pin.Visible,
		"when":    when,
		"args":    argsText,
		"detail": func(b []byte) string {
			if len(b) == 0 {
				return "-"
			}
			return pin.Visible(string(b))
		},
		"dash": func(s string) string {
			if s == "" {
				return "-"
			}
			return pin.Visible(s)
		},
	}
	out := map[string]*template.Template{}
	for _, n := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parsing page %s: %w", n, err)
		}
		out[n] = t
	}
	return out, nil
}

// view is what the layout and a page render.
type view struct {
	Page     string
	Operator string
	CSRF     string
	Flash    []flash
	// State is the live state the page was rendered at (data-state): the
	// script refreshes the page when /events reports another.
	State string
	Data  map[string]any
}

// refreshHeader marks the console script's live refresh of a page: a page
// rendered for it does not take the session's messages.
const refreshHeader = "X-Gatehouse-Refresh"

// render executes page into a buffer, then writes it with status.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, page string, s *session, data map[string]any) {
	v := view{Page: page, Data: data}
	if s != nil {
		v.Operator, v.CSRF = s.name, s.csrf
		if r.Header.Get(refreshHeader) == "" {
			// A live refresh leaves the messages to the next page shown: it
			// may come from a page that is already leaving (a form was just
			// posted and its answer is on the way), whose refresh is thrown
			// away.
			v.Flash = s.takeFlash()
		}
		if st, err := c.liveState(r.Context()); err == nil {
			v.State = st.token
		}
	}
	var buf bytes.Buffer
	if err := c.pages[page].Execute(&buf, v); err != nil {
		c.log.Error("console: rendering a page", "page", page, "err", err)
		http.Error(w, "internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail shows a store failure on the page instead of its data.
func (c *console) fail(w http.ResponseWriter, r *http.Request, s *session, page string, err error) {
	c.log.Error("console: reading the store", "page", page, "err", err)
	c.render(w, r, http.StatusInternalServerError, page, s, map[string]any{"Error": "the store could not be read: " + err.Error()})
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// argsText shows a call's arguments indented, hidden characters visible.
func argsText(b []byte) string {
	if len(b) == 0 {
		return "(not recorded)"
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return pin.Visible(string(b))
	}
	return pin.Visible(out.String())
}

// liveState is what the live updates watch: the pending approvals and the
// unreviewed drift.
type liveState struct {
	token            string
	approvals, drift int
}

func (c *console) liveState(ctx context.Context) (liveState, error) {
	pending, err := c.pending(ctx)
	if err != nil {
		return liveState{}, err
	}
	open, err := c.st.OpenObservations(ctx, "", false)
	if err != nil {
		return liveState{}, err
	}
	drifted := trust.Unreviewed(open)
	parts := make([]string, 0, len(pending)+len(drifted))
	for _, a := range pending {
		parts = append(parts, "a:"+a.ID)
	}
	for _, o := range drifted {
		parts = append(parts, "d:"+strconv.FormatInt(o.ID, 10))
	}
	return liveState{token: stateToken(parts...), approvals: len(pending), drift: len(drifted)}, nil
}

// pending returns the approvals that can still be decided.
func (c *console) pending(ctx context.Context) ([]store.Approval, error) {
	as, err := c.st.ListApprovals(ctx, store.ApprovalPending)
	if err != nil {
		return nil, err
	}
	now := c.now()
	return slices.DeleteFunc(as, func(a store.Approval) bool { return a.Expired(now) }), nil
}

// approvalView is one approval as the page shows it: with its key, and
// its tool as the store knows it now (description, quarantine).
type approvalView struct {
	store.Approval
	Key string
	Now toolNow
}

func keyOf(a store.Approval) string {
	if a.CallerKey != "" {
		return a.CallerKey
	}
	return a.RunID + ":" + a.ToolCallID
}

func (c *console) approvalsPage(w http.ResponseWriter, r *http.Request, s *session) {
	pending, err := c.pending(r.Context())
	if err != nil {
		c.fail(w, r, s, "approvals", err)
		return
	}
	all, err := c.st.ListApprovals(r.Context(), "")
	if err != nil {
		c.fail(w, r, s, "approvals", err)
		return
	}
	ix, err := c.toolIndex(r.Context())
	if err != nil {
		c.fail(w, r, s, "approvals", err)
		return
	}
	var pv, dv []approvalView
	for _, a := range pending {
		pv = append(pv, approvalView{a, keyOf(a), ix.of(a.Server, a.Tool)})
	}
	for _, a := range slices.Backward(all) {
		if a.State != store.ApprovalPending && len(dv) < 20 {
			dv = append(dv, approvalView{a, keyOf(a), ix.of(a.Server, a.Tool)})
		}
	}
	c.render(w, r, http.StatusOK, "approvals", s, map[string]any{"Pending": pv, "Decided": dv})
}

// decide approves or denies one approval, as `gatehouse approvals approve`
// does, with the operator's name as the decider.
func (c *console) decide(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PostForm.Get("id")
	verdict := r.PostForm.Get("verdict")
	if id == "" || (verdict != "approve" && verdict != "deny") {
		http.Error(w, `bad request: give an approval id and a verdict of "approve" or "deny"`, http.StatusBadRequest)
		return
	}
	a, err := c.st.DecideApproval(r.Context(), id, verdict == "approve", s.name, c.now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.say("error", fmt.Sprintf("No approval has the ID %s.", id))
	case errors.Is(err, store.ErrExpired):
		s.say("error", fmt.Sprintf("Approval %s has expired and can no longer be decided; the caller's next attempt asks again.", id))
	case errors.Is(err, store.ErrAlreadyDecided):
		msg := fmt.Sprintf("Approval %s was already decided; a decision is final.", id)
		if cur, gerr := c.st.GetApproval(r.Context(), id); gerr == nil {
			msg = fmt.Sprintf("Approval %s is already %s (by %s); a decision is final.", id, cur.State, cur.DecidedBy)
		}
		s.say("error", msg)
	case err != nil:
		s.say("error", "The decision was not recorded: "+err.Error())
	default:
		c.record(r.Context(), store.AuditEntry{Kind: audit.KindApprovalDecided, Subject: s.name, Server: a.Server, Tool: a.Tool,
			ArgsDigest: audit.ArgsDigest(a.Args), Outcome: string(a.State),
			Detail: audit.Detail(map[string]any{"approvalId": a.ID, "caller": a.Owner, "via": "console"})})
		s.say("ok", fmt.Sprintf("Approval %s: %s by %s.", a.ID, a.State, s.name))
	}
	http.Redirect(w, r, "/approvals", http.StatusSeeOther)
}

// record appends an operator's action to the operators' chain and
// checkpoints the chain at it (signed with Options.AuditSigningKey).
func (c *console) record(ctx context.Context, e store.AuditEntry) {
	e.At = c.now()
	_, err := audit.AppendCheckpointed(context.WithoutCancel(ctx), c.st, audit.OperatorChain, e, c.signKey)
	switch {
	case errors.Is(err, audit.ErrNotCheckpointed):
		c.log.Warn("console: the audit trail recorded an operator's action without a checkpoint", "kind", e.Kind, "operator", e.Subject, "err", err)
	case err != nil:
		c.log.Error("console: the audit trail did not record an operator's action", "kind", e.Kind, "operator", e.Subject, "err", err)
	}
}

// driftView is one server's unreviewed drift as the page shows it.
type driftView struct {
	Server    store.Server
	Obs       store.Observation
	Summary   string
	Diff      string
	Trustable bool
	Latest    store.Observation
	// Concerns are the concerns of the new text (concernLines); with any,
	// trusting takes Confirm, the server's name, typed.
	Concerns []string
	Confirm  string
}

func (c *console) driftPage(w http.ResponseWriter, r *http.Request, s *session) {
	items, err := c.drift(r.Context())
	if err != nil {
		c.fail(w, r, s, "drift", err)
		return
	}
	c.render(w, r, http.StatusOK, "drift", s, map[string]any{"Items": items})
}

// drift reads every server's unreviewed drift, rendered as `gatehouse drift
// show` renders it.
func (c *console) drift(ctx context.Context) ([]driftView, error) {
	servers, err := c.st.ListServers(ctx)
	if err != nil {
		return nil, err
	}
	open, err := c.st.OpenObservations(ctx, "", false)
	if err != nil {
		return nil, err
	}
	byID := map[string]store.Server{}
	for _, sv := range servers {
		byID[sv.ID] = sv
	}
	latest := map[string]store.Observation{}
	for _, o := range open {
		latest[o.ServerID] = o // ascending ID: the last one wins
	}
	var out []driftView
	for _, o := range trust.Unreviewed(open) {
		v := driftView{Server: byID[o.ServerID], Obs: o, Latest: latest[o.ServerID]}
		if v.Server.ID == "" {
			v.Server.ID = o.ServerID
		}
		v.Trustable = v.Latest.ID == o.ID
		v.Concerns, v.Confirm = concernLines(o.Changes), confirmName(v.Server)
		var cs []pin.Change
		if err := json.Unmarshal(o.Changes, &cs); err != nil {
			v.Summary, v.Diff = "(unreadable)", "the changes of observation "+strconv.FormatInt(o.ID, 10)+" are not JSON: the store row is damaged"
		} else {
			var b strings.Builder
			for i, ch := range cs {
				if i > 0 {
					b.WriteString("\n")
				}
				_ = pin.RenderChange(&b, ch)
			}
			v.Summary, v.Diff = pin.Summarize(cs), b.String()
		}
		out = append(out, v)
	}
	return out, nil
}

// trust makes exactly the listing the page showed (its fingerprint, from
// the form) the server's baseline; if the server published anything else
// since, nothing changes and the page says so.
func (c *console) trust(w http.ResponseWriter, r *http.Request, s *session) {
	id, fp := r.PostForm.Get("server"), r.PostForm.Get("listing")
	if id == "" || !isFingerprint(fp) {
		http.Error(w, "bad request: give a server row ID and the listing fingerprint shown (64 hex digits)", http.StatusBadRequest)
		return
	}
	// A listing whose new text has concerns takes a second, deliberate
	// step: the server's name typed. Checked here, on what the store
	// holds for that listing, not on what the form says of it.
	need, name, err := c.flagged(r.Context(), id, fp)
	if err != nil {
		s.say("error", "The trust was not recorded: "+err.Error())
		http.Redirect(w, r, "/drift", http.StatusSeeOther)
		return
	}
	if need && strings.TrimSpace(r.PostForm.Get("confirm")) != name {
		s.say("error", fmt.Sprintf("Not trusted: listing %s of %s has new text with hidden characters or wording like an "+
			"instruction to a model. Read it closely; to trust it, type the server's name, %s, in the field beside the button. Nothing changed.",
			fp, pin.Visible(name), pin.Visible(name)))
		http.Redirect(w, r, "/drift", http.StatusSeeOther)
		return
	}
	o, err := c.st.TrustListing(r.Context(), id, fp)
	var stale *store.StaleListingError
	switch {
	case errors.As(err, &stale):
		msg := fmt.Sprintf("Not trusted: listing %s is no longer what server %s publishes", fp, pin.Visible(id))
		if stale.Latest.ID != 0 {
			msg += fmt.Sprintf(" (the latest is %s, seen by %s at %s)", pin.Visible(stale.Latest.Listing), pin.Visible(stale.Latest.SeenBy), when(stale.Latest.SeenAt))
		}
		s.say("error", msg+". Nothing changed: review what is shown now.")
		c.record(r.Context(), store.AuditEntry{Kind: audit.KindTrust, Subject: s.name, Server: id, Outcome: "stale",
			Detail: audit.Detail(map[string]any{"listing": fp, "serverId": id, "via": "console"})})
	case errors.Is(err, store.ErrNotFound):
		s.say("error", fmt.Sprintf("No server has the row ID %s.", pin.Visible(id)))
	case err != nil:
		s.say("error", "The trust was not recorded: "+err.Error())
	default:
		name := id
		if sv, gerr := c.st.GetServer(r.Context(), id); gerr == nil {
			name = sv.Name
		}
		c.record(r.Context(), store.AuditEntry{Kind: audit.KindTrust, Subject: s.name, Server: name, Outcome: "trusted",
			Detail: audit.Detail(map[string]any{"listing": fp, "serverId": id, "via": "console"})})
		s.say("ok", fmt.Sprintf("Trusted listing %s of %s (seen by %s at %s): it is the server's baseline now.",
			o.Listing, pin.Visible(name), pin.Visible(o.SeenBy), when(o.SeenAt)))
	}
	http.Redirect(w, r, "/drift", http.StatusSeeOther)
}

// isFingerprint reports whether s is 64 lowercase hex digits.
func isFingerprint(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			return false
		}
	}
	return true
}
