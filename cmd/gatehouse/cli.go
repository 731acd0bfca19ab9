package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Exit codes shared by every command.
const (
	ExitOK       = 0 // success
	ExitFailure  = 1 // the command ran and the answer is "no" (e.g. a rejected plugin) or it failed
	ExitUsage    = 2 // the command line itself is wrong
	exitInternal = 1
)

// usageError marks a command-line mistake; Main turns it into ExitUsage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitError carries a specific exit code for a command whose failure has
// already been reported (for example a rejected plugin, printed as a result).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs the gatehouse command line with args (without the program name)
// and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "gatehouse: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		if errors.As(err, new(*gateway.ConfigError)) {
			return ExitUsage // it names the file, the field and the fix: the help has nothing to add
		}
		path := "gatehouse"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
		return ExitUsage
	}
	return exitInternal
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gatehouse",
		Short: "Load Agent Plugins, connect their MCP servers safely, and serve them",
		Long: "Gatehouse loads Agent Plugins (plugin.json, skills/, mcp.json), connects their MCP servers\n" +
			"behind an egress guard, projects their tools under provider-legal names, and serves them as one\n" +
			"hardened MCP endpoint (gatehouse serve) with a durable journal under every call.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what `gatehouse version` prints.
		Version: versionString(),
		// A bare `gatehouse` is a usage error, not a success.
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_ = cmd.Help()
			return usagef("a command is required")
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newVersionCmd(), newPluginCmd(), newToolsCmd(), newRunsCmd(), newApprovalsCmd(), newServeCmd(), newTrustCmd(), newDriftCmd(), newSkillsCmd(), newAuditCmd(), newConnectionsCmd(), newConnectCmd(), newStoreCmd())
	return root
}

// noArgs is cobra.NoArgs returning a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (got %d arguments)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

// groupCmd is a command that only holds subcommands: run bare, it prints
// its help and fails with a usage error that names them, in order.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.Name()
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usagef("%s needs a subcommand (%s)", use, strings.Join(names, ", "))
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}
