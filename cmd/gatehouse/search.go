package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// searchQuery is `gatehouse tools --search QUERY [--limit N]`, checked
// before any server is connected.
type searchQuery struct {
	args metatool.SearchArgs
}

// parseSearch reads --search and --limit the way gatehouse__search_tools
// reads its arguments: a mistake is a usage error that says why.
func parseSearch(cmd *cobra.Command, cfg *gateway.Config, query string, limit int) (*searchQuery, error) {
	if !cmd.Flags().Changed("search") {
		return nil, usagef("--limit needs --search QUERY")
	}
	in := map[string]any{"query": query}
	if cmd.Flags().Changed("limit") {
		in["limit"] = limit
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	a, err := metatool.ParseSearchArgs(raw, cfg.Search.Limit)
	var ae *metatool.ArgsError
	if errors.As(err, &ae) {
		flag := "--search"
		if ae.Field == "limit" {
			flag = "--limit"
		}
		return nil, usagef("%s: %s", flag, ae.Msg)
	}
	if err != nil {
		return nil, err
	}
	return &searchQuery{args: a}, nil
}

// run prints what the gateway's search tool would answer a caller who may
// see every tool the config's tools.allow and tools.block let through:
// its structured content with --json, else its text. Diagnostics go to
// stderr, so that stdout is the answer alone.
func (q *searchQuery) run(cmd *cobra.Command, ts *toolset.Toolset, cfg *gateway.Config, ds []diag.Diagnostic, asJSON bool) error {
	allow, block := map[string]bool{}, map[string]bool{}
	for _, n := range cfg.Tools.Allow {
		allow[n] = true
	}
	for _, n := range cfg.Tools.Block {
		block[n] = true
	}
	hits, err := ts.SearchFor(cmd.Context(), q.args.Query, q.args.Limit, func(name string) bool {
		return (len(allow) == 0 || allow[name]) && !block[name] && name != metatool.GatewaySearchName
	})
	if err != nil {
		return err
	}
	for _, d := range ds {
		fmt.Fprintf(cmd.ErrOrStderr(), "diagnostic: %s\n", escaped(d.String()))
	}
	res := metatool.SearchResult(q.args, hits)
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), res.StructuredContent)
	}
	for _, line := range strings.Split(strings.TrimRight(res.StructuredContent.(metatool.SearchAnswer).Text(q.args.Query), "\n"), "\n") {
		fmt.Fprintln(cmd.OutOrStdout(), escaped(line))
	}
	return nil
}
