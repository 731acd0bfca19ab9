package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

func newTrustCmd() *cobra.Command {
	var sf storeFlags
	var plugins []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "trust SERVER [--config FILE] [--plugin DIR]... [--store DSN]",
		Short: "Re-trust a server's current tool contracts (clears its drift baseline and records what it publishes now)",
		Long: "Connects to one MCP server of the given plugins and config, lists its tools, clears the server's\n" +
			"trust baseline in the store and records the current contracts as the new baseline, then prints\n" +
			"what it recorded. Quarantined tools become active and withheld ones visible, here and in every\n" +
			"process that watches the store (a running `gatehouse serve` notices within seconds).\n\n" +
			"SERVER is the server's name, or its store row ID (\"<plugin>/<server>\", or \"config:<server>\"\n" +
			"for a server of the config) when several servers share the name.\n\n" +
			"The store is --store, else $GATEHOUSE_STORE, else the config's store, else\n" +
			"sqlite:.gatehouse/gatehouse.db in the working directory.",
		Args: exactArgs(1, "one SERVER (a server name or store row ID)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := sf.loadConfig()
			if err != nil {
				return err
			}
			servers, _ := collectServers(cfg, plugins)
			if len(servers) == 0 {
				return usagef("trust: no MCP server is configured: give --plugin DIR or --config FILE")
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
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rec)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "re-trusted server %s (row %s): %d tool contracts recorded, %d old baseline entries cleared\n",
				rec.Server, rec.ServerID, len(rec.Tools), rec.Cleared)
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tFINGERPRINT")
			for _, t := range rec.Tools {
				fmt.Fprintf(tw, "%s\t%s\n", t.Name, t.Fingerprint)
			}
			for _, p := range rec.Prompts {
				fmt.Fprintf(tw, "(prompt) %s\t%s\n", p.Name, p.Fingerprint)
			}
			for _, r := range rec.ResourceTemplates {
				fmt.Fprintf(tw, "(resource template) %s\t%s\n", r.Name, r.Fingerprint)
			}
			fmt.Fprintf(tw, "(instructions)\t%s\n", rec.Instructions)
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().StringArrayVar(&plugins, "plugin", nil, "a plugin directory (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was recorded as one JSON object")
	return cmd
}
