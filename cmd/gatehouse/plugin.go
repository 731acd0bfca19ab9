package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

func newPluginCmd() *cobra.Command {
	return groupCmd("plugin", "Work with Agent Plugins",
		newPluginCheckCmd())
}

// checkReport is the --json shape of `gatehouse plugin check` (docs/reference/cli.md).
type checkReport struct {
	OK          bool              `json:"ok"`
	Name        string            `json:"name"`
	Skills      []string          `json:"skills"`
	MCPServers  []string          `json:"mcpServers"`
	Diagnostics []diag.Diagnostic `json:"diagnostics"`
}

func newCheckReport(r plugin.Result) checkReport {
	rep := checkReport{
		OK:          r.OK(),
		Skills:      []string{},
		MCPServers:  []string{},
		Diagnostics: r.Diagnostics,
	}
	if rep.Diagnostics == nil {
		rep.Diagnostics = []diag.Diagnostic{}
	}
	if p := r.Plugin; p != nil {
		rep.Name = p.Manifest.Name
		for _, s := range p.Skills {
			rep.Skills = append(rep.Skills, s.Name)
		}
		for _, s := range p.Servers {
			rep.MCPServers = append(rep.MCPServers, s.Name)
		}
		sort.Strings(rep.Skills)
		sort.Strings(rep.MCPServers)
	}
	return rep
}

func newPluginCheckCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "Load one plugin directory and report what loaded and why anything did not",
		Long: "Loads one Agent Plugins 1.0.0 plugin directory and connects nothing.\n" +
			"Exit status: 0 when the plugin loads (with or without diagnostics), 1 when it is rejected,\n" +
			"2 on a usage error.",
		Args: exactArgs(1, "exactly one plugin directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep := newCheckReport(plugin.Load(args[0]))
			out := cmd.OutOrStdout()
			var err error
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				err = enc.Encode(rep)
			} else {
				err = writeCheckText(out, args[0], rep)
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (docs/reference/cli.md)")
	return cmd
}

func writeCheckText(w io.Writer, dir string, rep checkReport) error {
	var b strings.Builder
	if rep.OK {
		fmt.Fprintf(&b, "plugin %s: loaded from %s\n", rep.Name, dir)
		fmt.Fprintf(&b, "  skills:     %s\n", listOrNone(rep.Skills))
		fmt.Fprintf(&b, "  mcpServers: %s\n", listOrNone(rep.MCPServers))
	} else {
		fmt.Fprintf(&b, "plugin at %s: rejected\n", dir)
	}
	if len(rep.Diagnostics) > 0 {
		fmt.Fprintf(&b, "  diagnostics:\n")
		for _, d := range rep.Diagnostics {
			fmt.Fprintf(&b, "    - %s\n", d)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	return strings.Join(xs, ", ")
}
