package console

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// The runs page shows what a caller did: each keyed call's tool, the
// idempotency key as the caller sent it, its journal record (run and call
// IDs), its outcome and when. The journal keeps only hashed IDs for a
// gateway call (the run names the caller's use of a tool, the call the key
// within it); the tool and the key come from the audit entry the gateway
// commits with the call's journal completion, whose detail names the
// record (key, runId, toolCallId), and from the approval of a call that
// asked for one (its CallerKey).

// maxRuns caps the runs one page lists.
const maxRuns = 100

// maxCalls caps the calls the page of one subject lists (the latest).
const maxCalls = 500

// maxAuditScan caps the audit entries one page reads, per subject, to
// find the tools and keys of the calls it shows.
const maxAuditScan = 5000

// callKey names a journal record within a subject's runs.
type callKey struct{ run, call string }

// callInfo is what the audit trail or an approval says of one keyed call.
type callInfo struct {
	tool, server, key, outcome string
}

// callDetail is the part of a call entry's detail that names its journal
// record (gateway/internal/auditlog: key, runId, toolCallId).
type callDetail struct {
	Key        string `json:"key"`
	RunID      string `json:"runId"`
	ToolCallID string `json:"toolCallId"`
}

// callIndex is what the page knows of a subject's keyed calls beyond the
// journal: by record, and the tool of each run.
type callIndex struct {
	calls map[callKey]callInfo
	tools map[string]string // run ID -> tool
	// capped reports that the audit entries read reached maxAuditScan:
	// later calls may show no tool or key.
	capped bool
}

// indexCalls reads what the audit trail (entries of subject at or after
// since) and the approvals say of subject's keyed calls.
func (c *console) indexCalls(ctx context.Context, subject string, since time.Time, approvals []store.Approval) (*callIndex, error) {
	ix := &callIndex{calls: map[callKey]callInfo{}, tools: map[string]string{}}
	for _, a := range approvals {
		if a.Owner != subject || a.Tool == "" {
			continue
		}
		k := callKey{a.RunID, a.ToolCallID}
		ix.calls[k] = callInfo{tool: a.Tool, server: a.Server, key: a.CallerKey, outcome: "approval " + string(a.State)}
		ix.tools[a.RunID] = a.Tool
	}
	es, err := c.st.ListAudit(ctx, store.AuditFilter{Subject: subject, Since: since, Limit: maxAuditScan})
	if err != nil {
		return nil, err
	}
	ix.capped = len(es) == maxAuditScan
	for _, e := range es {
		if len(e.Detail) == 0 || e.Tool == "" {
			continue
		}
		var d callDetail
		if json.Unmarshal(e.Detail, &d) != nil || d.RunID == "" || d.ToolCallID == "" {
			continue
		}
		k := callKey{d.RunID, d.ToolCallID}
		// The entry committed with the completion is the record's outcome:
		// it wins over an approval's state.
		ix.calls[k] = callInfo{tool: e.Tool, server: e.Server, key: d.Key, outcome: e.Outcome}
		ix.tools[d.RunID] = e.Tool
	}
	return ix, nil
}

// runRow is one run as the page lists it: with its tool when known.
type runRow struct {
	store.Run
	Tool string
}

// callRow is one journal record as the page of a subject lists it: with
// the tool, the caller's key and the outcome when known.
type callRow struct {
	store.Record
	Tool, Key, Outcome string
}

// since is the earliest time the audit entries of runs can carry (a little
// before the first record was created: the clocks of replicas differ).
func since(runs []store.Run) time.Time {
	var t time.Time
	for _, r := range runs {
		if t.IsZero() || r.FirstAt.Before(t) {
			t = r.FirstAt
		}
	}
	if t.IsZero() {
		return t
	}
	return t.Add(-time.Minute)
}

// runsPage lists the subjects' runs (every subject without ?subject=),
// each with its tool; with one subject, its runs and their calls, the
// latest first (tool, key, outcome, when), and the purge form.
func (c *console) runsPage(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	subject, one := q.Get("subject"), q.Has("subject")
	ctx := r.Context()
	runs, err := c.st.ListRuns(ctx, store.RunFilter{Owner: subject, AnyOwner: !one, Limit: maxRuns})
	if err != nil {
		c.fail(w, r, s, "runs", err)
		return
	}
	approvals, err := c.st.ListApprovals(ctx, "")
	if err != nil {
		c.fail(w, r, s, "runs", err)
		return
	}
	byOwner := map[string][]store.Run{}
	var owners []string
	for _, run := range runs {
		if _, ok := byOwner[run.Owner]; !ok {
			owners = append(owners, run.Owner)
		}
		byOwner[run.Owner] = append(byOwner[run.Owner], run)
	}
	index := map[string]*callIndex{}
	capped := false
	for _, o := range owners {
		ix, err := c.indexCalls(ctx, o, since(byOwner[o]), approvals)
		if err != nil {
			c.fail(w, r, s, "runs", err)
			return
		}
		index[o], capped = ix, capped || ix.capped
	}
	rows := make([]runRow, 0, len(runs))
	for _, run := range runs {
		rows = append(rows, runRow{Run: run, Tool: index[run.Owner].tools[run.RunID]})
	}
	data := map[string]any{"Subject": subject, "One": one, "Runs": rows, "Capped": len(runs) == maxRuns, "AuditCapped": capped}
	if one {
		var calls []callRow
		for _, run := range runs {
			recs, err := c.st.ListRecords(ctx, run.Scope, run.RunID)
			if err != nil {
				c.fail(w, r, s, "runs", err)
				return
			}
			for _, rec := range recs {
				row := callRow{Record: rec, Tool: index[subject].tools[rec.RunID]}
				if in, ok := index[subject].calls[callKey{rec.RunID, rec.ToolCallID}]; ok {
					row.Tool, row.Key, row.Outcome = in.tool, in.key, in.outcome
				}
				calls = append(calls, row)
			}
		}
		slices.SortStableFunc(calls, func(a, b callRow) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ToolCallID, b.ToolCallID))
		})
		data["CallsCapped"] = len(calls) > maxCalls
		data["Calls"] = calls[:min(len(calls), maxCalls)]
	}
	c.render(w, r, http.StatusOK, "runs", s, data)
}
