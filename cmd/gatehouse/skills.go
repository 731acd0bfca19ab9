package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/skills"
)

// skillsReport is the --json shape of `gatehouse skills`.
type skillsReport struct {
	Skills []skillReport `json:"skills"`
	// Index is the text an agent's system prompt gets (skills.Catalog.Index).
	Index       string            `json:"index"`
	Diagnostics []diag.Diagnostic `json:"diagnostics"`
}

type skillReport struct {
	Plugin      string `json:"plugin"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// URI is the body's resource URI (skill://PLUGIN/NAME/SKILL.md).
	URI string `json:"uri"`
	// Fingerprint is the skill's contract fingerprint, what trust pins.
	Fingerprint string       `json:"fingerprint"`
	Files       []fileReport `json:"files"`
}

type fileReport struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Size int64  `json:"size"`
	// SHA256 is "" for a file larger than a catalog serves.
	SHA256 string `json:"sha256"`
	URI    string `json:"uri"`
}

func newSkillsCmd() *cobra.Command {
	var configPath string
	var plugins []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "skills [--plugin DIR]... [--config FILE] [--json]",
		Short: "Print the skills of the given plugins and config as an agent or a client would see them",
		Long: "Loads the given plugins (and the config's plugins) and prints their Agent Skills as an agent\n" +
			"on durable/loop or a client of `gatehouse serve` would see them: each skill's plugin, name and\n" +
			"sanitized description, its files (kind and size; symlinks out of the skill directory and files\n" +
			"with hidden characters in their names are left out, with a diagnostic), and the index a model's\n" +
			"system prompt gets. Nothing is connected, run or written; --json adds each skill's URI and\n" +
			"contract fingerprint and each file's SHA-256.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" && len(plugins) == 0 {
				return usagef("skills needs --plugin DIR or --config FILE")
			}
			cfg, err := loadConfigOrDefault(configPath)
			if err != nil {
				return err
			}
			var loaded []*plugin.Plugin
			var ds []diag.Diagnostic
			for _, dir := range append(cfg.PluginDirs(), plugins...) {
				res := plugin.Load(dir)
				ds = append(ds, res.Diagnostics...)
				if res.OK() {
					loaded = append(loaded, res.Plugin)
				}
			}
			cat, cds := skills.New(loaded, nil)
			rep := skillsReport{Skills: []skillReport{}, Index: cat.Index(), Diagnostics: append(ds, cds...)}
			if rep.Diagnostics == nil {
				rep.Diagnostics = []diag.Diagnostic{}
			}
			for _, s := range cat.Skills() {
				fp, _ := cat.Fingerprint(s.Plugin, s.Name)
				sr := skillReport{Plugin: s.Plugin, Name: s.Name, Description: s.Description,
					URI: skills.URI(s.Plugin, s.Name, skills.BodyPath), Fingerprint: fp, Files: []fileReport{}}
				for _, f := range s.Files {
					sr.Files = append(sr.Files, fileReport{Path: f.Path, Kind: f.Kind, Size: f.Size, SHA256: f.SHA256,
						URI: skills.URI(s.Plugin, s.Name, f.Path)})
				}
				rep.Skills = append(rep.Skills, sr)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return writeSkillsText(cmd, rep)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "gateway config file (YAML): its plugins are included")
	cmd.Flags().StringArrayVar(&plugins, "plugin", nil, "a plugin directory (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: skills (with URIs, fingerprints, file hashes), index, diagnostics")
	return cmd
}

func writeSkillsText(cmd *cobra.Command, rep skillsReport) error {
	out := cmd.OutOrStdout()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tFILES\tDESCRIPTION")
	for _, s := range rep.Skills {
		fmt.Fprintf(tw, "%s/%s\t%d\t%s\n", s.Plugin, s.Name, len(s.Files), escaped(firstLine(s.Description, 70)))
	}
	if len(rep.Skills) == 0 {
		fmt.Fprintln(tw, "(no skills)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range rep.Skills {
		if len(s.Files) == 0 {
			continue
		}
		fmt.Fprintf(out, "\nfiles of %s/%s:\n", s.Plugin, s.Name)
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, f := range s.Files {
			size := strconv.FormatInt(f.Size, 10) + " bytes"
			if f.SHA256 == "" {
				size += " (too large to serve)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", escaped(f.Path), f.Kind, size)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if rep.Index != "" {
		fmt.Fprintf(out, "\nindex (appended to a model's system prompt, %d bytes):\n", len(rep.Index))
		for _, l := range strings.Split(strings.TrimSuffix(rep.Index, "\n"), "\n") {
			fmt.Fprintln(out, strings.TrimRight("  | "+escaped(l), " "))
		}
	}
	if len(rep.Diagnostics) > 0 {
		fmt.Fprintln(out, "\ndiagnostics:")
		for _, d := range rep.Diagnostics {
			fmt.Fprintf(out, "  - %s\n", escaped(d.String()))
		}
	}
	return nil
}
