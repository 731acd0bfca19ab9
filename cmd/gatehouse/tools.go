package main

//lint:file-ignore SA1019 sampling, roots and logging are deprecated as of 2026-07-28 and still served to callers of the revisions that have them

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// toolsReport is the --json shape of `gatehouse tools` (docs/reference/cli.md).
type toolsReport struct {
	Tools       []toolset.ToolInfo `json:"tools"`
	Diagnostics []diag.Diagnostic  `json:"diagnostics"`
	// Store is the store the run persisted to (password redacted), when
	// one was given.
	Store string `json:"store,omitempty"`
}

func newToolsCmd() *cobra.Command {
	var configPath, storeDSN, query string
	var plugins []string
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "tools [--config FILE] [--plugin DIR]... [--search QUERY [--limit N]] [--json]",
		Short: "Connect every server of the given plugins and config, print the tool map an agent would see, and close",
		Long: "Connects every MCP server of the given plugins (and of the config's plugins and servers),\n" +
			"projects the tool map exactly as an agent would see it, and closes. Nothing is served.\n\n" +
			"With a store (--store, or the config's store when --config is given, or $GATEHOUSE_STORE; it is\n" +
			"created when there is none), each server's catalogue is recorded, its tool contracts are pinned\n" +
			"on first sight, and drift is reported: a changed tool is quarantined, a new one withheld, a\n" +
			"removed one reported (tool-drift diagnostics). They are served once " + helpRemedy() + ".\n\n" +
			"With --search, prints what the gateway's gatehouse__search_tools would answer a caller who may\n" +
			"see every tool the config's tools.allow/tools.block let through: the tools that fit QUERY, best\n" +
			"first (--limit, default the config's search.limit); --json prints its structured content.\n\n" +
			"Exit status: 0 when every server's tools are served; 1 when any server was skipped (not\n" +
			"reachable, refused by the egress guard, not run by this configuration...): the output is\n" +
			"printed in full first, then standard error names each skipped server and why, one a line;\n" +
			"1 also when the command fails; 2 on a usage error. A server whose tools drifted (quarantined\n" +
			"or withheld) is served and reported by its tool-drift diagnostics: it is not skipped, and\n" +
			"the exit status is 0. An mcp.json entry the plugin loader rejects never becomes a server to\n" +
			"connect: it is a diagnostic only (`gatehouse plugin check` reports it).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" && len(plugins) == 0 {
				return usagef("tools needs --plugin DIR or --config FILE")
			}
			cfg, err := loadConfigOrDefault(configPath)
			if err != nil {
				return err
			}
			var sq *searchQuery
			if cmd.Flags().Changed("search") || cmd.Flags().Changed("limit") {
				if sq, err = parseSearch(cmd, cfg, query, limit); err != nil {
					return err
				}
			}
			servers, ds := collectServers(cfg, plugins)
			opts := &toolset.Options{
				AllowedHosts: cfg.AllowedHosts,
				Budget:       cfg.Disclosure.Budget,
			}
			childOptions(opts, cfg, cmd.ErrOrStderr())
			var redacted string
			if d := toolsStoreDSN(storeDSN, configPath, cfg); d != "" {
				// tools creates the store it is given: reviewing a
				// server with it before the gateway's first run pins
				// what was reviewed (docs/security.md).
				st, err := openStore(cmd.Context(), d, true)
				if err != nil {
					return err
				}
				defer st.Close()
				opts.Store = st
				if p, err := store.ParseDSN(d); err == nil {
					redacted = p.String()
				}
			}
			ts, err := toolset.Open(cmd.Context(), servers, opts)
			if err != nil {
				return err
			}
			defer ts.Close()
			tools, err := ts.Tools(cmd.Context())
			if err != nil {
				return err
			}
			ds = append(ds, ts.Diagnostics()...)
			skipped, err := skippedServers(cmd, ts, servers, ds)
			if err != nil {
				return err
			}
			if sq != nil {
				err = sq.run(cmd, ts, cfg, ds, asJSON)
			} else {
				rep := toolsReport{Tools: tools, Diagnostics: ds, Store: redacted}
				if rep.Tools == nil {
					rep.Tools = []toolset.ToolInfo{}
				}
				if rep.Diagnostics == nil {
					rep.Diagnostics = []diag.Diagnostic{}
				}
				if asJSON {
					err = writeJSON(cmd.OutOrStdout(), rep)
				} else {
					err = writeToolsText(cmd, rep)
				}
			}
			if err != nil {
				return err
			}
			return reportSkipped(cmd.ErrOrStderr(), skipped, len(servers))
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "gateway config file (YAML): its plugins, servers, allowedHosts and disclosure apply")
	cmd.Flags().StringArrayVar(&plugins, "plugin", nil, "a plugin directory (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (docs/reference/cli.md; with --search, the search's structured content)")
	cmd.Flags().StringVar(&query, "search", "", "print what gatehouse__search_tools would answer for QUERY")
	cmd.Flags().IntVar(&limit, "limit", 0, "with --search, the most tools to show (1 to 50; default the config's search.limit)")
	cmd.Flags().StringVar(&storeDSN, "store", "", "store DSN (sqlite:PATH, postgres://...): record the catalogues and trust baselines there and report drift against them")
	return cmd
}

// skipRules are the rules of the diagnostics that say why a server is not
// served (the toolset's own and its egress guard's, and a plugin's server
// entry refused at launch).
var skipRules = []diag.Rule{diag.ConnectionFailure, diag.HostNotAllowed, diag.UnsafeAddress, diag.InvalidURL,
	diag.InvalidHeader, diag.UnsupportedTransport, diag.PathEscapesPluginRoot, diag.InvalidServerEntry, diag.ReservedEnvName}

// skippedServers returns one diagnostic per server of servers that ts does
// not serve (not among its Upstreams), in order: the one of ds that says
// why. A server whose tools drifted (quarantined or withheld) is served.
func skippedServers(cmd *cobra.Command, ts *toolset.Toolset, servers []toolset.Server, ds []diag.Diagnostic) ([]diag.Diagnostic, error) {
	ups, err := ts.Upstreams(cmd.Context())
	if err != nil {
		return nil, err
	}
	served := map[string]int{}
	for _, u := range ups {
		served[u.Name()]++
	}
	var out []diag.Diagnostic
	used := make([]bool, len(ds))
	for _, s := range servers {
		name := s.Config.Name
		if served[name] > 0 {
			served[name]--
			continue
		}
		d := diag.New(diag.ConnectionFailure, "", name, "server %q is not served", name)
		for i, x := range ds {
			if !used[i] && x.Origin == name && slices.Contains(skipRules, x.Rule) {
				used[i], d = true, x
				break
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// reportSkipped fails `gatehouse tools` (ExitFailure, after its output)
// when any of its n servers was skipped (skippedServers), naming each with
// why on a line of its own, escaped (it may quote a server's error).
func reportSkipped(w io.Writer, skipped []diag.Diagnostic, n int) error {
	if len(skipped) == 0 {
		return nil
	}
	noun := "servers"
	if n == 1 {
		noun = "server"
	}
	fmt.Fprintf(w, "gatehouse: %d of %d %s skipped; their tools are not served:\n", len(skipped), n, noun)
	for _, d := range skipped {
		fmt.Fprintf(w, "  %s\n", escaped(d.String()))
	}
	return &exitError{code: ExitFailure}
}

// toolsStoreDSN chooses the store `gatehouse tools` persists to: --store;
// else, with --config, the config's store ($GATEHOUSE_STORE overriding
// it); else $GATEHOUSE_STORE; else none (nothing is persisted and drift is
// not judged across runs).
func toolsStoreDSN(flag, configPath string, cfg *gateway.Config) string {
	switch {
	case flag != "":
		return flag
	case configPath != "":
		return store.DSNFromEnv(cfg.StoreDSN())
	}
	return store.DSNFromEnv("")
}

func loadConfigOrDefault(path string) (*gateway.Config, error) {
	if path != "" {
		return gateway.LoadConfig(path)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return gateway.ParseConfig(nil, "", wd)
}

// collectServers loads the config's plugins and the extra plugin
// directories, adds the config's inline servers (parsed once, by the
// gateway's config: cfg.InlineServers), and returns the servers to connect
// plus the diagnostics of everything that was skipped or warned about.
func collectServers(cfg *gateway.Config, extraPlugins []string) ([]toolset.Server, []diag.Diagnostic) {
	var servers []toolset.Server
	var ds []diag.Diagnostic
	dirs := append(cfg.PluginDirs(), extraPlugins...)
	for _, dir := range dirs {
		res := plugin.Load(dir)
		ds = append(ds, res.Diagnostics...)
		for _, s := range toolset.PluginServers(res.Plugin) {
			// As the gateway does: a server or its plugin may be named.
			s.AlwaysLoad = slices.Contains(cfg.Disclosure.AlwaysLoad, s.Config.Name) ||
				slices.Contains(cfg.Disclosure.AlwaysLoad, res.Plugin.Manifest.Name)
			servers = append(servers, s)
		}
	}
	ds = append(ds, cfg.InlineDiagnostics()...)
	return append(servers, cfg.InlineServers()...), ds
}

func writeToolsText(cmd *cobra.Command, rep toolsReport) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tREMOTE NAME\tDISCLOSURE\tSTATE\tDESCRIPTION")
	for _, t := range rep.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Server, shown(t.RemoteName), t.Disclosure, t.State, firstLine(t.Description, 60))
	}
	if len(rep.Tools) == 0 {
		fmt.Fprintln(tw, "(no tools)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Diagnostics) > 0 {
		fmt.Fprintln(cmd.OutOrStdout(), "diagnostics:")
		for _, d := range rep.Diagnostics {
			fmt.Fprintf(cmd.OutOrStdout(), "  - %s\n", escaped(d.String()))
		}
	}
	return nil
}

// shown is a name a server chose as a terminal may print it: the name
// itself when it is valid UTF-8 and every rune a visible character, else
// quoted with Go's ASCII escapes (it could carry a terminal escape, a bidi
// control or invisible text). The description is sanitized already.
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.Is(unicode.Variation_Selector, r) {
			return strconv.QuoteToASCII(s)
		}
	}
	if !utf8.ValidString(s) {
		return strconv.QuoteToASCII(s)
	}
	return s
}

// escaped is text for a terminal: s with every rune that is not a visible
// character (but TAB) written as its Go escape, and every byte of invalid
// UTF-8 as \xNN. A diagnostic may quote a server's error message.
func escaped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// childOptions gives the stdio servers the CLI starts (tools, trust) what
// `gatehouse serve` gives them: the minimal environment (never a
// GATEHOUSE_* variable, so not the store's DSN) plus the config's
// inheritEnv, and their stderr as the "line" field of log records on the
// command's stderr rather than raw bytes that could forge a line or move
// the terminal's cursor. Their sessions announce the client capabilities
// the gateway's announce (sampling, elicitation, roots: its relay routes
// them), so a server that lists tools by them lists here what the gateway
// pins, and a listing reviewed or trusted here is the one it judges.
func childOptions(o *toolset.Options, cfg *gateway.Config, stderr io.Writer) {
	o.Env = toolset.MinimalEnv(os.Environ(), cfg.InheritEnv)
	o.StderrLog = slog.New(slog.NewTextHandler(stderr, nil))
	o.ClientCapabilities = &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{}, RootsV2: &mcp.RootCapabilities{ListChanged: true}}
}
