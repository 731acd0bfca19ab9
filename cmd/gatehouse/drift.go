package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/trust"
)

func newDriftCmd() *cobra.Command {
	return groupCmd("drift", "Review the drift the fleet has observed: servers whose listing differs from what was trusted",
		newDriftListCmd(), newDriftShowCmd())
}

// driftServerJSON is one server in `drift list --json` (docs/reference/cli.md).
type driftServerJSON struct {
	// Server is the configured name, ID the store row ID.
	Server string `json:"server"`
	ID     string `json:"id"`
	// Listing is the observed listing's fingerprint: what
	// `gatehouse trust ID --listing` takes.
	Listing string    `json:"listing"`
	SeenAt  time.Time `json:"seenAt"`
	SeenBy  string    `json:"seenBy"`
	// Changes is the observation's array of pin.Change, verbatim (null
	// when the store holds something that is not JSON).
	Changes json.RawMessage `json:"changes"`
}

func newDriftListCmd() *cobra.Command {
	var sf storeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the servers with unreviewed drift: the observed listing, when and by which instance it was seen, and its changes",
		Long: "Reads the store only (no server is connected). A server has unreviewed drift when an instance's latest\n" +
			"listing of it, made since its baseline was last trusted, differs from that baseline; the latest such\n" +
			"observation is shown, and under the table what to do next for each: " + helpRemedy() + ".\n" +
			"A server's changed tools stay quarantined, and its new ones withheld, until then.\n\n" +
			"The skills of a plugin are pinned like a server's tools, under the row \"skills:<plugin>\": a skill\n" +
			"whose SKILL.md or files changed on disk, or one the plugin gained, is listed here as a change of kind\n" +
			"\"skill\" (and withheld until trusted: `gatehouse trust skills:<plugin> --listing FINGERPRINT`).\n\n" +
			"With --json: {\"servers\": [{\"server\", \"id\", \"listing\", \"seenAt\", \"seenBy\", \"changes\": [...]}]},\n" +
			"sorted by row ID; each change is {\"kind\", \"name\", \"change\", \"before\", \"after\"} (kind: tool, prompt,\n" +
			"template, instructions or skill).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			servers, err := st.ListServers(cmd.Context())
			if err != nil {
				return err
			}
			open, err := st.OpenObservations(cmd.Context(), "", false)
			if err != nil {
				return err
			}
			names := map[string]string{}
			for _, s := range servers {
				names[s.ID] = s.Name
			}
			out := []driftServerJSON{}
			var unreadable []string
			for _, o := range trust.Unreviewed(open) {
				changes := json.RawMessage(o.Changes)
				if !json.Valid(changes) {
					changes = nil
					unreadable = append(unreadable, fmt.Sprintf("observation %d of server %s", o.ID, o.ServerID))
				}
				out = append(out, driftServerJSON{Server: names[o.ServerID], ID: o.ServerID, Listing: o.Listing,
					SeenAt: o.SeenAt.UTC(), SeenBy: o.SeenBy, Changes: changes})
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), map[string]any{"servers": out})
			} else {
				err = writeDriftTable(cmd.OutOrStdout(), out)
			}
			if err != nil {
				return err
			}
			if len(unreadable) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "gatehouse: the changes of %s are not JSON (shown as null); the store row is damaged\n",
					strings.Join(unreadable, ", "))
				return &exitError{ExitFailure}
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"servers": [...]}`)
	return cmd
}

func writeDriftTable(w io.Writer, servers []driftServerJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tID\tLISTING\tSEEN AT\tSEEN BY\tCHANGES")
	for _, s := range servers {
		summary := "(unreadable)"
		if cs, err := parseChanges(s.Changes); err == nil {
			summary = pin.Summarize(cs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", dash(oneLine(s.Server)), oneLine(s.ID), oneLine(s.Listing),
			s.SeenAt.Format(time.RFC3339), oneLine(s.SeenBy), summary)
	}
	if len(servers) == 0 {
		fmt.Fprintln(tw, "(no unreviewed drift)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(servers) > 0 {
		fmt.Fprintln(w)
	}
	for _, s := range servers {
		if _, err := fmt.Fprintf(w, "Next for %s: %s.\n", oneLine(s.ID), pin.TrustRemedy(oneLine(s.ID), oneLine(s.Listing))); err != nil {
			return err
		}
	}
	return nil
}

// helpRemedy is pin.TrustRemedy as the commands' help writes it, for any
// server.
func helpRemedy() string { return pin.TrustRemedy("SERVER", "") }

// parseChanges reads an observation's (or a record's) changes.
func parseChanges(raw []byte) ([]pin.Change, error) {
	var cs []pin.Change
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fmt.Errorf("the changes are not a JSON array of changes: %w", err)
	}
	return cs, nil
}

// renderChanges writes each change as pin.RenderChange does, a blank line
// before each.
func renderChanges(w io.Writer, cs []pin.Change) error {
	for _, c := range cs {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := pin.RenderChange(w, c); err != nil {
			return err
		}
	}
	return nil
}

func newDriftShowCmd() *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "show SERVER",
		Short: "Show a server's unreviewed drift as a readable diff, hidden characters made visible",
		Long: "Reads the store only (no server is connected). Prints the observed listing's fingerprint, when and by\n" +
			"which instance it was seen, and each change against the trusted baseline: descriptions line by line,\n" +
			"schemas and annotations field by field. Characters that hide or reorder text (zero-width, bidi\n" +
			"controls, tag characters, controls, invalid UTF-8) are shown as escapes like ⟦U+200B⟧. New text\n" +
			"with such characters, or worded like an instruction to a model (\"ignore previous instructions\",\n" +
			"\"you must\", \"do not tell\", data sent to an address), is listed under Concerns: read it closely.\n" +
			"Last, what to do next: " + pin.TrustRemedy("SERVER", "") + ".\n\n" +
			"SERVER is the server's name, or its store row ID when several servers share the name;\n" +
			"\"skills:<plugin>\" for the skills of a plugin (a skill's SKILL.md and files are shown by hash).",
		Args: exactArgs(1, "one SERVER (a server name or store row ID)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			srv, err := resolveStoredServer(cmd.Context(), st, args[0])
			if err != nil {
				return err
			}
			open, err := st.OpenObservations(cmd.Context(), srv.ID, false)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			who := fmt.Sprintf("server %s (row %s)", oneLine(srv.Name), oneLine(srv.ID))
			drifted := trust.Unreviewed(open)
			if len(drifted) == 0 {
				_, err := fmt.Fprintf(out, "%s has no unreviewed drift: no listing seen since its baseline was trusted differs from it\n", who)
				return err
			}
			o := drifted[0]
			cs, err := parseChanges(o.Changes)
			if err != nil {
				return fmt.Errorf("%s: observation %d: %w", who, o.ID, err)
			}
			fmt.Fprintf(out, "%s: unreviewed drift\n", who)
			fmt.Fprintf(out, "  listing:  %s\n", oneLine(o.Listing))
			fmt.Fprintf(out, "  seen:     %s by %s", o.SeenAt.UTC().Format(time.RFC3339), oneLine(o.SeenBy))
			if o.LastSeenAt.After(o.SeenAt) {
				fmt.Fprintf(out, " (again at %s)", o.LastSeenAt.UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(out, "\n  baseline: version %d\n  changes:  %s\n", o.BaselineVersion, pin.Summarize(cs))
			if err := renderChanges(out, cs); err != nil {
				return err
			}
			fmt.Fprintln(out)
			writeConcerns(out, cs)
			if latest := open[len(open)-1]; latest.ID != o.ID {
				// unreviewed picked the latest that drifted: this one did not.
				_, err = fmt.Fprintf(out, "Note: the server's latest observation is a later listing %s, seen by %s at %s, which matches the\n"+
					"trusted baseline; only the latest observation can be trusted.\n", oneLine(latest.Listing),
					oneLine(latest.SeenBy), latest.SeenAt.UTC().Format(time.RFC3339))
				return err
			}
			_, err = fmt.Fprintf(out, "Next: %s.\n", pin.TrustRemedy(oneLine(srv.ID), oneLine(o.Listing)))
			return err
		},
	}
	sf.add(cmd)
	return cmd
}

// writeConcerns lists the concerns of the changes' new text
// (pin.ChangeConcerns), a blank line after them; nothing when there are
// none.
func writeConcerns(w io.Writer, cs []pin.Change) {
	var lines []string
	for _, c := range cs {
		for _, k := range pin.ChangeConcerns(c) {
			lines = append(lines, "  ! "+pin.RenderConcern(c, k)+"\n")
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "Concerns: the new text has hidden characters or reads like an instruction to a model; read it closely:")
	for _, l := range lines {
		_, _ = io.WriteString(w, l)
	}
	fmt.Fprintln(w)
}

// oneLine is pin.Visible for a table cell or a message: TAB and LF are
// escaped too, so a name cannot break a line or a column.
func oneLine(s string) string {
	v := pin.Visible(s)
	if !strings.ContainsAny(v, "\t\n") {
		return v
	}
	return strings.NewReplacer("\t", "⟦U+0009⟧", "\n", "⟦U+000A⟧").Replace(v)
}

// resolveStoredServer finds a server row by row ID, else by name; a name
// that several rows share must be given as a row ID.
func resolveStoredServer(ctx context.Context, st store.ServerStore, arg string) (store.Server, error) {
	rows, err := st.ListServers(ctx)
	if err != nil {
		return store.Server{}, err
	}
	var byName []store.Server
	for _, s := range rows {
		if s.ID == arg {
			return s, nil
		}
		if s.Name == arg {
			byName = append(byName, s)
		}
	}
	switch len(byName) {
	case 1:
		return byName[0], nil
	case 0:
		if len(rows) == 0 {
			return store.Server{}, fmt.Errorf("no server in the store has the name or row ID %q: the store has no servers yet (has a gateway or `gatehouse tools` used it?)", arg)
		}
		return store.Server{}, fmt.Errorf("no server in the store has the name or row ID %q (see `gatehouse drift list`)", arg)
	}
	ids := make([]string, len(byName))
	for i, s := range byName {
		ids[i] = oneLine(s.ID)
	}
	return store.Server{}, fmt.Errorf("several servers are named %q; name one by its row ID: %s", arg, strings.Join(ids, ", "))
}
