package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// purge deletes every journal row and approval of one subject, as
// `gatehouse runs purge --subject` does.
func (c *console) purge(w http.ResponseWriter, r *http.Request, s *session) {
	if !r.PostForm.Has("subject") {
		http.Error(w, "bad request: give the subject whose rows are purged", http.StatusBadRequest)
		return
	}
	subject := r.PostForm.Get("subject")
	n, err := c.st.Purge(r.Context(), subject)
	if err != nil {
		s.say("error", "Nothing was purged: "+err.Error())
	} else {
		c.record(r.Context(), store.AuditEntry{Kind: audit.KindPurge, Subject: s.name, Outcome: "ok",
			Detail: audit.Detail(map[string]any{"subject": subject, "rows": n, "via": "console"})})
		s.say("ok", fmt.Sprintf("Purged %d rows of subject %s.", n, pin.Visible(strconv.Quote(subject))))
	}
	http.Redirect(w, r, "/runs?subject="+url.QueryEscape(subject), http.StatusSeeOther)
}

// serversPage shows the configured servers and their health (from the
// running gateway) beside the store's rows and their open drift.
func (c *console) serversPage(w http.ResponseWriter, r *http.Request, s *session) {
	var live []ServerStatus
	if c.servers != nil {
		live = c.servers(r.Context())
	}
	rows, err := c.st.ListServers(r.Context())
	if err != nil {
		c.fail(w, r, s, "servers", err)
		return
	}
	open, err := c.st.OpenObservations(r.Context(), "", false)
	if err != nil {
		c.fail(w, r, s, "servers", err)
		return
	}
	drifted := map[string]bool{}
	for _, o := range trust.Unreviewed(open) {
		drifted[o.ServerID] = true
	}
	c.render(w, r, http.StatusOK, "servers", s, map[string]any{"Live": live, "HasLive": c.servers != nil, "Rows": rows, "Drifted": drifted})
}

// auditPageSize is how many entries the audit page shows at once.
const auditPageSize = 200

// auditPage lists the audit log's entries the query selects.
func (c *console) auditPage(w http.ResponseWriter, r *http.Request, s *session) {
	f, err := ParseAuditQuery(r.URL.Query())
	if err != nil {
		c.render(w, r, http.StatusBadRequest, "audit", s, map[string]any{"Error": err.Error(), "Q": r.URL.Query()})
		return
	}
	f.Limit = auditPageSize + 1
	es, err := c.st.ListAudit(r.Context(), f)
	if err != nil {
		c.fail(w, r, s, "audit", err)
		return
	}
	next := ""
	if len(es) > auditPageSize {
		es = es[:auditPageSize]
		q := r.URL.Query()
		q.Set("after", strconv.FormatInt(es[len(es)-1].ID, 10))
		next = "/audit?" + q.Encode()
	}
	c.render(w, r, http.StatusOK, "audit", s, map[string]any{"Entries": es, "Q": r.URL.Query(), "Next": next})
}

// verifyPage verifies every chain of the audit trail (audit.Verify, with
// Options.AuditKey when set) and shows the result.
func (c *console) verifyPage(w http.ResponseWriter, r *http.Request, s *session) {
	res, err := audit.Verify(r.Context(), c.st, &audit.VerifyOptions{PublicKey: c.auditKey})
	if err != nil {
		c.fail(w, r, s, "verify", err)
		return
	}
	keyID := ""
	if c.auditKey != nil {
		keyID = audit.KeyID(c.auditKey)
	}
	c.render(w, r, http.StatusOK, "verify", s, map[string]any{"Result": res, "KeyID": keyID})
}

// AuditFilterError is a query of the audit page that cannot be read: the
// parameter and what is wrong with it.
type AuditFilterError struct {
	Param string
	Msg   string
}

// Error says which parameter is wrong and how.
func (e *AuditFilterError) Error() string { return fmt.Sprintf("audit filter %s: %s", e.Param, e.Msg) }

// maxFilterLen bounds a chain, subject or kind filter.
const maxFilterLen = 512

// ParseAuditQuery reads the audit page's query: chain, subject and kind
// (exact values, at most 512 bytes of UTF-8 without control characters),
// since and until (RFC 3339 times, or dates YYYY-MM-DD in UTC; since
// before until) and after (an entry ID, a non-negative integer). Each
// parameter at most once; any other parameter is an error.
func ParseAuditQuery(q url.Values) (store.AuditFilter, error) {
	var f store.AuditFilter
	for k, vs := range q {
		if len(vs) > 1 {
			return f, &AuditFilterError{k, "given more than once"}
		}
		v := vs[0]
		switch k {
		case "chain", "subject", "kind":
			if len(v) > maxFilterLen || !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return f, &AuditFilterError{k, "must be at most 512 bytes of text without control characters"}
			}
			switch k {
			case "chain":
				f.Chain = v
			case "subject":
				f.Subject = v
			default:
				f.Kind = v
			}
		case "since", "until":
			if v == "" {
				continue
			}
			t, err := parseWhen(v)
			if err != nil {
				return f, &AuditFilterError{k, err.Error()}
			}
			if k == "since" {
				f.Since = t
			} else {
				f.Until = t
			}
		case "after":
			if v == "" {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return f, &AuditFilterError{k, fmt.Sprintf("%q is not an entry ID (a non-negative integer)", v)}
			}
			f.AfterID = n
		default:
			return f, &AuditFilterError{k, "is not a filter (chain, subject, kind, since, until, after)"}
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, &AuditFilterError{"until", "must be after since"}
	}
	return f, nil
}

// parseWhen reads an RFC 3339 time or a date (UTC midnight).
func parseWhen(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02T15:04", v); err == nil { // what <input type=datetime-local> sends
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339 such as 2026-01-31T12:00:00Z, or a date 2026-01-31)", v)
}
