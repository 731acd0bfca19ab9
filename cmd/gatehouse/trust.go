package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/skills"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
	"github.com/gatehouse-dev/gatehouse/trust"
)

func newTrustCmd() *cobra.Command {
	var sf storeFlags
	var plugins []string
	var asJSON bool
	var listing string
	cmd := &cobra.Command{
		Use:   "trust SERVER [--listing FINGERPRINT] [--config FILE] [--plugin DIR]... [--store DSN]",
		Short: "Trust a server's listing: exactly the observed one you reviewed (--listing), or what it publishes now",
		Long: "With --listing FINGERPRINT, connects to nothing: makes the listing with that fingerprint, as an instance\n" +
			"observed it and `gatehouse drift list`/`drift show` showed it, the server's trusted baseline, in one\n" +
			"store transaction, and prints the changes it accepted. It is refused (exit 1, nothing changed) unless\n" +
			"that listing is the server's latest observation: if the server has published anything else since,\n" +
			"review that first.\n\n" +
			"Without --listing, connects to one MCP server of the given plugins and config, lists it, replaces the\n" +
			"server's trust baseline in the store with what it publishes now, and prints the changes that accepted\n" +
			"and what it recorded: whatever the server publishes at that moment, a change made after your review\n" +
			"included (--listing cannot). For drift, the safe way is always: " + helpRemedy() + ".\n\n" +
			"Either way quarantined tools become active and withheld ones visible, here and in every process that\n" +
			"watches the store (a running `gatehouse serve` notices within seconds).\n\n" +
			"SERVER is the server's name, or its store row ID (\"<plugin>/<server>\", or \"config:<server>\"\n" +
			"for a server of the config) when several servers share the name. \"skills:<plugin>\" names the\n" +
			"skills of a plugin, pinned like a server's tools: without --listing, the plugin's skills as they are\n" +
			"on disk now (SKILL.md and every file, by hash) become their trusted baseline.\n\n" +
			"The store is --store, else $GATEHOUSE_STORE, else the config's store, else\n" +
			"sqlite:.gatehouse/gatehouse.db in the working directory.",
		Args: exactArgs(1, "one SERVER (a server name or store row ID)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("listing") {
				if len(plugins) > 0 {
					return usagef("trust --listing reads the store only: --plugin has no use with it")
				}
				fp, err := parseListing(listing)
				if err != nil {
					return err
				}
				return trustListing(cmd, &sf, args[0], fp, asJSON)
			}
			cfg, err := sf.loadConfig()
			if err != nil {
				return err
			}
			if name, ok := skills.PluginOf(args[0]); ok {
				return trustSkills(cmd, &sf, cfg, plugins, name, asJSON)
			}
			servers, _ := collectServers(cfg, plugins)
			if len(servers) == 0 {
				return usagef("trust: no MCP server is configured: give --plugin DIR or --config FILE (or --listing FINGERPRINT to trust an observed listing from the store)")
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			opts := &toolset.Options{
				AllowedHosts: cfg.AllowedHosts,
				Budget:       cfg.Disclosure.Budget,
				Store:        st,
			}
			childOptions(opts, cfg, cmd.ErrOrStderr())
			ts, err := toolset.Open(cmd.Context(), servers, opts)
			if err != nil {
				return err
			}
			defer ts.Close()
			for _, d := range ts.Diagnostics() {
				if d.Origin == args[0] {
					fmt.Fprintf(cmd.ErrOrStderr(), "gatehouse: %s\n", d)
				}
			}
			rec, err := ts.Retrust(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("trust %s: %w", args[0], err)
			}
			auditOperator(cmd.Context(), &sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindTrust, Subject: defaultOperator(),
				Server: args[0], Outcome: "trusted", Detail: audit.Detail(map[string]any{"listing": "as published now"})})
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rec)
			}
			return writeTrustRecord(cmd.OutOrStdout(), rec)
		},
	}
	sf.add(cmd)
	cmd.Flags().StringArrayVar(&plugins, "plugin", nil, "a plugin directory (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was trusted as one JSON object")
	cmd.Flags().StringVar(&listing, "listing", "", "trust exactly this observed listing: its `FINGERPRINT`, as gatehouse drift show and drift list print it; connects nothing")
	return cmd
}

// parseListing checks a listing fingerprint given on the command line: 64
// hex digits (either case; fingerprints are written in lower case).
func parseListing(s string) (string, error) {
	if len(s) != 64 {
		return "", usagef("--listing takes a listing fingerprint, 64 hex digits as `gatehouse drift list` shows it (got %q: %d characters)", s, utf8.RuneCountInString(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", usagef("--listing takes a listing fingerprint, 64 hex digits as `gatehouse drift list` shows it (got %q: %q at offset %d is not a hex digit)", s, c, i)
		}
	}
	return strings.ToLower(s), nil
}

// listingTrustJSON is what `trust --listing --json` prints.
type listingTrustJSON struct {
	Server    string          `json:"server"`
	ID        string          `json:"id"`
	Listing   string          `json:"listing"`
	SeenAt    time.Time       `json:"seenAt"`
	SeenBy    string          `json:"seenBy"`
	TrustedAt time.Time       `json:"trustedAt"`
	Changes   json.RawMessage `json:"changes"`
}

// trustListing trusts the observed listing fp of the server named arg,
// from the store alone.
func trustListing(cmd *cobra.Command, sf *storeFlags, arg, fp string, asJSON bool) error {
	ctx := cmd.Context()
	st, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := resolveStoredServer(ctx, st, arg)
	if err != nil {
		return fmt.Errorf("trust %s: %w", arg, err)
	}
	who := fmt.Sprintf("server %s (row %s)", oneLine(srv.Name), oneLine(srv.ID))
	o, err := st.TrustListing(ctx, srv.ID, fp)
	var stale *store.StaleListingError
	switch {
	case errors.As(err, &stale):
		return staleError(who, srv.ID, fp, stale.Latest)
	case err != nil:
		return fmt.Errorf("trust %s --listing %s: %w", arg, fp, err)
	}
	auditOperator(ctx, sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindTrust, Subject: defaultOperator(),
		Server: srv.Name, Outcome: "trusted", Detail: audit.Detail(map[string]any{"listing": fp, "serverId": srv.ID})})
	cs, perr := parseChanges(o.Changes)
	if asJSON {
		changes := json.RawMessage(o.Changes)
		if !json.Valid(changes) {
			changes = nil
		}
		if err := writeJSON(cmd.OutOrStdout(), listingTrustJSON{Server: srv.Name, ID: srv.ID, Listing: o.Listing,
			SeenAt: o.SeenAt.UTC(), SeenBy: o.SeenBy, TrustedAt: o.TrustedAt.UTC(), Changes: changes}); err != nil {
			return err
		}
	} else {
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "trusted listing %s of %s, seen by %s at %s: it is the server's baseline now (%d baseline entries)\n",
			oneLine(o.Listing), who, oneLine(o.SeenBy), o.SeenAt.UTC().Format(time.RFC3339), len(o.Entries))
		if perr == nil {
			fmt.Fprintf(out, "accepted changes: %s\n", pin.Summarize(cs))
			if err := renderChanges(out, cs); err != nil {
				return err
			}
		}
	}
	if perr != nil {
		return fmt.Errorf("the listing was trusted, but its changes cannot be shown: observation %d: %w", o.ID, perr)
	}
	return nil
}

// staleError says why trust --listing changed nothing.
func staleError(who, id, fp string, latest store.Observation) error {
	switch {
	case latest.ID == 0:
		return fmt.Errorf("nothing changed: %s has no observed listing waiting to be trusted, so listing %s cannot be trusted "+
			"(see `gatehouse drift list`)", who, fp)
	case !latest.Drifted:
		return fmt.Errorf("nothing changed: listing %s is not the latest observation of %s; the latest is %s, seen by %s at %s, "+
			"and it matches the trusted baseline", fp, who, oneLine(latest.Listing), oneLine(latest.SeenBy),
			latest.SeenAt.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("nothing changed: listing %s is not the latest observation of %s; the latest is %s, seen by %s at %s; "+
		"next, %s", fp, who, oneLine(latest.Listing), oneLine(latest.SeenBy),
		latest.SeenAt.UTC().Format(time.RFC3339), pin.TrustRemedy(oneLine(id), oneLine(latest.Listing)))
}

// writeTrustRecord prints what a plain `gatehouse trust` accepted (the
// changes, rendered) and recorded.
func writeTrustRecord(out io.Writer, rec trust.TrustRecord) error {
	fmt.Fprintf(out, "re-trusted server %s (row %s): %d tool contracts recorded, %d old baseline entries cleared\n",
		oneLine(rec.Server), oneLine(rec.ServerID), len(rec.Tools), rec.Cleared)
	if rec.Listing != "" {
		fmt.Fprintf(out, "listing %s\n", oneLine(rec.Listing))
	}
	if len(rec.Changes) > 0 {
		fmt.Fprintf(out, "accepted changes: %s\n", pin.Summarize(rec.Changes))
		if err := renderChanges(out, rec.Changes); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tFINGERPRINT")
	for _, t := range rec.Tools {
		fmt.Fprintf(tw, "%s\t%s\n", oneLine(t.Name), t.Fingerprint)
	}
	for _, p := range rec.Prompts {
		fmt.Fprintf(tw, "(prompt) %s\t%s\n", oneLine(p.Name), p.Fingerprint)
	}
	for _, r := range rec.ResourceTemplates {
		fmt.Fprintf(tw, "(resource template) %s\t%s\n", oneLine(r.Name), r.Fingerprint)
	}
	fmt.Fprintf(tw, "(instructions)\t%s\n", rec.Instructions)
	return tw.Flush()
}

// trustSkills re-trusts the skills of the plugin name as the plugins of the
// config and --plugin have them on disk now (skills.Retrust).
func trustSkills(cmd *cobra.Command, sf *storeFlags, cfg *gateway.Config, extra []string, name string, asJSON bool) error {
	id := skills.Owner(name)
	dirs := append(cfg.PluginDirs(), extra...)
	if len(dirs) == 0 {
		return usagef("trust %s: no plugin is configured: give --plugin DIR or --config FILE (or --listing FINGERPRINT to trust an observed listing from the store)", oneLine(id))
	}
	var ps []*plugin.Plugin
	for _, dir := range dirs {
		res := plugin.Load(dir)
		if res.Plugin != nil && res.Plugin.Manifest.Name != name {
			continue
		}
		for _, d := range res.Diagnostics {
			fmt.Fprintf(cmd.ErrOrStderr(), "gatehouse: %s\n", escaped(d.String()))
		}
		if res.Plugin != nil {
			ps = append(ps, res.Plugin)
		}
	}
	cat, ds := skills.New(ps, nil)
	for _, d := range ds {
		fmt.Fprintf(cmd.ErrOrStderr(), "gatehouse: %s\n", escaped(d.String()))
	}
	st, err := sf.open(cmd.Context())
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := skills.Retrust(cmd.Context(), st, cat, name)
	if err != nil {
		return fmt.Errorf("trust %s: %w", oneLine(id), err)
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), rec)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "re-trusted the skills of plugin %s (row %s): %d skills recorded, %d old baseline entries cleared\n",
		oneLine(rec.Plugin), oneLine(rec.ID), len(rec.Skills), rec.Cleared)
	fmt.Fprintf(out, "listing %s\n", oneLine(rec.Listing))
	if len(rec.Changes) > 0 {
		fmt.Fprintf(out, "accepted changes: %s\n", pin.Summarize(rec.Changes))
		if err := renderChanges(out, rec.Changes); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tFINGERPRINT")
	for _, s := range rec.Skills {
		fmt.Fprintf(tw, "%s\t%s\n", oneLine(s.Name), s.Fingerprint)
	}
	for _, n := range rec.Unpinnable {
		fmt.Fprintf(tw, "%s\t(cannot be pinned: withheld)\n", oneLine(n))
	}
	return tw.Flush()
}
