package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

func newRunsCmd() *cobra.Command {
	return groupCmd("runs", "List or purge journaled runs in the store",
		newRunsListCmd(), newRunsPurgeCmd())
}

// runJSON is one run in `runs list --json`.
type runJSON struct {
	Scope     string    `json:"scope"`
	RunID     string    `json:"runId"`
	Subject   string    `json:"subject"`
	Calls     int64     `json:"calls"`
	Started   int64     `json:"started"`
	Succeeded int64     `json:"succeeded"`
	Failed    int64     `json:"failed"`
	InDoubt   int64     `json:"inDoubt"`
	FirstAt   time.Time `json:"firstAt"`
	LastAt    time.Time `json:"lastAt"`
}

func newRunsListCmd() *cobra.Command {
	var sf storeFlags
	var subject string
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, most recent first (every subject unless --subject)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			f := store.RunFilter{Owner: subject, AnyOwner: !cmd.Flags().Changed("subject"), Limit: limit}
			runs, err := st.ListRuns(cmd.Context(), f)
			if err != nil {
				return err
			}
			out := make([]runJSON, 0, len(runs))
			for _, r := range runs {
				out = append(out, runJSON{r.Scope, r.RunID, r.Owner, r.Calls, r.Started, r.Succeeded, r.Failed, r.InDoubt, r.FirstAt.UTC(), r.LastAt.UTC()})
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"runs": out})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSCOPE\tSUBJECT\tCALLS\tSUCCEEDED\tFAILED\tIN DOUBT\tSTARTED\tLAST")
			for _, r := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", cell(r.RunID), cell(dash(r.Scope)), cell(dash(r.Subject)),
					r.Calls, r.Succeeded, r.Failed, r.InDoubt, r.Started, r.LastAt.Format(time.RFC3339))
			}
			if len(out) == 0 {
				fmt.Fprintln(tw, "(no runs)")
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&subject, "subject", "", "only the runs of this subject")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"runs": [...]}`)
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (0: all)")
	return cmd
}

func newRunsPurgeCmd() *cobra.Command {
	var sf storeFlags
	var subject string
	cmd := &cobra.Command{
		Use:   "purge --subject S",
		Short: "Delete every journal row, approval and upstream connection (token vault) of one subject and say how many",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("subject") {
				return usagef("runs purge needs --subject (purging everyone's runs is not offered)")
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.Purge(cmd.Context(), subject)
			if err != nil {
				return err
			}
			auditOperator(cmd.Context(), &sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindPurge, Subject: defaultOperator(),
				Outcome: "ok", Detail: audit.Detail(map[string]any{"subject": subject, "rows": n})})
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "purged %d rows of subject %q\n", n, subject)
			return err
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&subject, "subject", "", "the subject whose rows are deleted")
	return cmd
}

func newApprovalsCmd() *cobra.Command {
	return groupCmd("approvals", "List, approve or deny calls waiting for an operator",
		newApprovalsListCmd(), newDecideCmd(true), newDecideCmd(false))
}

// approvalJSON is one approval in `approvals list --json`.
type approvalJSON struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Subject is the caller the call belongs to.
	Subject string `json:"subject"`
	// Args are the call's arguments as sent (null when not recorded).
	Args json.RawMessage `json:"args"`
	// Key is the idempotency key as the caller sent it, or runId:toolCallId.
	Key             string         `json:"key"`
	Scope           string         `json:"scope"`
	RunID           string         `json:"runId"`
	ToolCallID      string         `json:"toolCallId"`
	ArgsFingerprint string         `json:"argsFingerprint"`
	Reason          string         `json:"reason"`
	AskedAt         time.Time      `json:"askedAt"`
	ExpiresAt       *time.Time     `json:"expiresAt,omitempty"`
	UsedAt          *time.Time     `json:"usedAt,omitempty"`
	DecidedAt       *time.Time     `json:"decidedAt,omitempty"`
	DecidedBy       string         `json:"decidedBy,omitempty"`
	Decisions       []decisionJSON `json:"decisions"`
	// Contract is the fingerprint of the tool's trusted contract the
	// approval was asked under ("" when unknown): a call under another
	// contract asks a new approval.
	Contract string `json:"contract"`
}

// decisionJSON is one decision of an approval.
type decisionJSON struct {
	Verdict string    `json:"verdict"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// toApprovalJSON shows a as an operator sees it at now: a live approval
// whose expiry has passed is "expired".
func toApprovalJSON(a store.Approval, now time.Time) approvalJSON {
	state := a.State
	if state.Live() && a.Expired(now) {
		state = store.ApprovalExpired
	}
	key := a.CallerKey
	if key == "" {
		key = a.RunID + ":" + a.ToolCallID
	}
	var args json.RawMessage
	if len(a.Args) > 0 && json.Valid(a.Args) {
		args = json.RawMessage(a.Args)
	}
	j := approvalJSON{ID: a.ID, State: string(state), Server: a.Server, Tool: a.Tool, Subject: a.Owner, Args: args, Key: key,
		Scope: a.Scope, RunID: a.RunID, ToolCallID: a.ToolCallID, ArgsFingerprint: a.ArgsFingerprint, Contract: a.Contract, Reason: a.Reason,
		AskedAt: a.CreatedAt.UTC(), ExpiresAt: optTime(a.ExpiresAt), UsedAt: optTime(a.UsedAt), DecidedAt: optTime(a.DecidedAt),
		DecidedBy: a.DecidedBy, Decisions: []decisionJSON{}}
	for _, d := range a.Decisions {
		j.Decisions = append(j.Decisions, decisionJSON{Verdict: string(d.Verdict), By: d.By, At: d.At.UTC()})
	}
	return j
}

func newApprovalsListCmd() *cobra.Command {
	var sf storeFlags
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the calls waiting for a decision: who asked, the tool, the arguments as sent, the key (--all: every approval)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			state := store.ApprovalPending
			if all {
				state = ""
			}
			as, err := st.ListApprovals(cmd.Context(), state)
			if err != nil {
				return err
			}
			now := time.Now()
			out := make([]approvalJSON, 0, len(as))
			for _, a := range as {
				j := toApprovalJSON(a, now)
				if !all && j.State != string(store.ApprovalPending) {
					continue // expired: it can no longer be decided
				}
				out = append(out, j)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"approvals": out})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tSUBJECT\tTOOL\tKEY\tASKED\tEXPIRES\tDECIDED BY\tARGS")
			for _, a := range out {
				expires := "never"
				if a.ExpiresAt != nil {
					expires = a.ExpiresAt.Format(time.RFC3339)
				}
				args := "(not recorded)"
				if a.Args != nil {
					args = string(a.Args)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(a.ID), a.State, cell(dash(a.Subject)), cell(a.Tool), cell(a.Key),
					a.AskedAt.Format(time.RFC3339), expires, cell(dash(a.DecidedBy)), cell(args))
			}
			if len(out) == 0 {
				fmt.Fprintln(tw, "(no approvals)")
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"approvals": [...]}`)
	cmd.Flags().BoolVar(&all, "all", false, "include approved, denied, used and expired ones")
	return cmd
}

func newDecideCmd(approve bool) *cobra.Command {
	var sf storeFlags
	var by string
	verb := "deny"
	if approve {
		verb = "approve"
	}
	cmd := &cobra.Command{
		Use:   verb + " ID",
		Short: fmt.Sprintf("%s a pending call: the same call with the same key then %s", verb, map[bool]string{true: "runs once", false: "fails with approval_denied"}[approve]),
		Args:  exactArgs(1, "one approval ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if by == "" {
				return usagef("--by must name who decides")
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			a, err := st.DecideApproval(cmd.Context(), args[0], approve, by, time.Now())
			switch {
			case errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("no approval with ID %q (see `gatehouse approvals list`)", args[0])
			case errors.Is(err, store.ErrExpired):
				msg := fmt.Sprintf("approval %s has expired", args[0])
				if cur, gerr := st.GetApproval(cmd.Context(), args[0]); gerr == nil {
					msg += " (at " + cur.ExpiresAt.UTC().Format(time.RFC3339) + ")"
				}
				return fmt.Errorf("%s and can no longer be decided; the caller's next attempt asks for a new approval", msg)
			case errors.Is(err, store.ErrAlreadyDecided):
				cur, gerr := st.GetApproval(cmd.Context(), args[0])
				switch {
				case gerr != nil:
					return fmt.Errorf("approval %s was already decided; a decision is final", args[0])
				case cur.State == store.ApprovalApproved || cur.State == store.ApprovalDenied || cur.State == store.ApprovalUsed:
					return fmt.Errorf("approval %s was already %s by %s; a decision is final", args[0], verdictOf(cur), dash(cur.DecidedBy))
				}
				return fmt.Errorf("approval %s is %s; a decision is final", args[0], cur.State)
			case err != nil:
				return err
			}
			auditOperator(cmd.Context(), &sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindApprovalDecided, Subject: by,
				Server: a.Server, Tool: a.Tool, ArgsDigest: audit.ArgsDigest(a.Args), Outcome: string(a.State),
				Detail: audit.Detail(map[string]any{"approvalId": a.ID, "caller": a.Owner})})
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: %s by %s (%s %s of %s)\n", a.ID, a.State, a.DecidedBy, a.Tool, argsText(a.Args), dash(a.Owner))
			return err
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&by, "by", defaultOperator(), "the `NAME` of who decides, recorded with the decision")
	return cmd
}

// verdictOf names the decision taken on a decided approval.
func verdictOf(a store.Approval) store.ApprovalState {
	if a.State == store.ApprovalUsed {
		return store.ApprovalApproved
	}
	return a.State
}

func argsText(b []byte) string {
	if len(b) == 0 {
		return "(arguments not recorded)"
	}
	return string(b)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// cell is s as one cell of a table printed for people: what callers and
// servers chose (keys, subjects, arguments) with every invisible,
// reordering or hidden character shown as an escape (pin.Visible, as the
// console shows them), and TAB and LF escaped too, so a value cannot break
// its row or pass for another column.
func cell(s string) string {
	s = pin.Visible(s)
	if strings.ContainsAny(s, "\t\n") {
		s = strings.NewReplacer("\t", "⟦U+0009⟧", "\n", "⟦U+000A⟧").Replace(s)
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
