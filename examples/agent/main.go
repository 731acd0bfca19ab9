// Command agent is a durable agent you can kill mid-run and start again:
// the run loop of package durable/loop, one provider adapter chosen by
// -provider, and a real MCP server — a small ledger, this binary in another
// role, over stdio — reached through a toolset. Started again with the same
// -run, it resumes: it asks the model nothing it already answered and
// repeats no effect.
//
// Without an API key (the default) the model is the adapter's local
// wire-format server on 127.0.0.1, scripted to add one ledger entry and then
// answer. With -real and the provider's key in the environment
// (OPENAI_API_KEY for openai, openai-chat and eino; ANTHROPIC_API_KEY for
// anthropic and fantasy, which the example drives through fantasy's
// Anthropic provider) it is the provider's API.
//
//	go run . -crash   # the ledger server kills this agent right after the entry is written
//	go run .          # the same run resumes: the entry is in doubt, not written again
//	go run . -fresh   # forget the run and start over
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/refusal"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == ledgerRole {
		if err := serveLedger(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "ledger:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

// The run the local model is scripted for.
const (
	prompt   = "Refund order 42: write a ledger entry of -42 EUR, then say what you did."
	system   = "You are a bookkeeping agent. Use the ledger tools; never write an entry twice."
	toolName = "ledger__add_entry"
	callID   = "call_refund_42"
	callArgs = `{"memo":"refund order 42","amount":-42}`
	answer   = "Refunded order 42: the ledger has its -42 EUR entry."
)

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	providerName := fs.String("provider", "openai", "the adapter: "+strings.Join(providerNames(), ", "))
	runID := fs.String("run", "refund-42", "the run's ID: the same ID resumes the run")
	dir := fs.String("dir", filepath.Join(os.TempDir(), "gatehouse-example-agent"), "where the journal (agent.db) and the ledger (ledger.txt) live")
	crash := fs.Bool("crash", false, "have the ledger server kill this agent right after it writes the entry (before the agent records the outcome)")
	fresh := fs.Bool("fresh", false, "delete the journal and the ledger first")
	real := fs.Bool("real", false, "use the provider's real API (needs its API key in the environment)")
	modelName := fs.String("model", "", "the model, with -real (default: the adapter's choice)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, ok := providers()[*providerName]
	if !ok {
		return fmt.Errorf("unknown -provider %q: one of %s", *providerName, strings.Join(providerNames(), ", "))
	}
	if *fresh {
		for _, f := range []string{"agent.db", "agent.db-wal", "agent.db-shm", "ledger.txt"} {
			if err := os.Remove(filepath.Join(*dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	ledger := filepath.Join(*dir, "ledger.txt")

	// The journal: a SQLite file, so a killed agent's records survive it.
	st, err := sqlite.Open(ctx, filepath.Join(*dir, "agent.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	journal, err := durable.NewJournal(st, &durable.JournalOptions{Approvals: st, Lease: time.Second})
	if err != nil {
		return err
	}

	// The MCP server, through a toolset: this binary in its ledger role.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := map[string]string{}
	if *crash {
		env[envCrash] = "1"
	}
	ts, err := toolset.Open(ctx, []toolset.Server{{Config: plugin.ServerConfig{
		Name: "ledger", Type: plugin.TransportStdio, Command: exe, Args: []string{ledgerRole, "-file", ledger}, Env: env,
	}}}, &toolset.Options{Store: st})
	if err != nil {
		return err
	}
	defer ts.Close()
	tools, err := loop.ToolsetTools(ctx, ts)
	if err != nil {
		return err
	}

	// The model: the provider's API, or its wire format served locally.
	var model loop.Model
	var requests func() int
	where := "its local wire-format server on 127.0.0.1"
	if *real {
		if os.Getenv(p.keyEnv) == "" {
			return fmt.Errorf("-real needs %s in the environment", p.keyEnv)
		}
		model, err = p.real(ctx, *modelName)
		if err != nil {
			return err
		}
		where = "its API"
	} else {
		var closeModel func()
		model, requests, closeModel, err = p.local(ctx, script())
		if err != nil {
			return err
		}
		defer closeModel()
	}
	fmt.Fprintf(stdout, "run %s with %s (%s)\n", *runID, *providerName, where)

	// A journaled turn is ~2 s of lease away from a crashed predecessor's:
	// wait it out instead of failing with run_busy.
	var res *loop.Result
	for attempt := 0; ; attempt++ {
		res, err = loop.Run(ctx, loop.Options{RunID: *runID, Journal: journal, Model: model, Tools: tools,
			Prompt: prompt, System: system})
		if err == nil || attempt == 10 || !busy(err) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	report(stdout, res, requests, ledger)
	return nil
}

// script is what the local model answers: turn 0 writes the entry, turn 1
// says so.
func script() []reply {
	return []reply{
		{Calls: []call{{ID: callID, Name: toolName, Args: callArgs}}},
		{Text: answer},
	}
}

func report(w io.Writer, res *loop.Result, requests func() int, ledger string) {
	fmt.Fprintf(w, "turns: %d (%d replayed from the journal)\n", res.Turns, res.ReplayedTurns)
	for _, m := range res.Messages {
		if m.Role == loop.RoleTool {
			fmt.Fprintf(w, "call %s (%s): %s\n", m.Name, m.ToolCallID, firstLine(m.Content))
		}
	}
	fmt.Fprintf(w, "answer: %s\n", res.Text)
	if requests != nil {
		fmt.Fprintf(w, "model requests in this process: %d\n", requests())
	}
	entries, _ := readLedger(ledger)
	fmt.Fprintf(w, "ledger entries: %d\n", len(entries))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// busy reports run_busy: the process this one replaces still holds the
// run's lease.
func busy(err error) bool {
	de, ok := refusal.As(err)
	return ok && de.Code == refusal.RunBusy
}

func providerNames() []string {
	names := make([]string, 0, len(providers()))
	for n := range providers() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// reply and call are the local model's script, the same shape every
// adapter's test server takes.
type reply struct {
	Text  string
	Calls []call
}

type call struct{ ID, Name, Args string }
