package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the agent (envRunAgent) and the ledger server
// (its first argument), as the built command is.
const envRunAgent = "EXAMPLE_AGENT_RUN_MAIN"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ledgerRole || os.Getenv(envRunAgent) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// agent runs the agent as its own process (so it can be killed) and
// returns what it printed and how it ended.
func agent(t *testing.T, args ...string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), envRunAgent+"=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKillAndResume is the example's promise, with each adapter: killed
// between writing the ledger entry and recording it, the agent started
// again asks the model only the turn it had not answered, does not write
// the entry again, and tells the model the call is in doubt; started once
// more, it replays everything and asks nothing.
func TestKillAndResume(t *testing.T) {
	for _, name := range providerNames() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			common := []string{"-provider", name, "-dir", dir}
			out, err := agent(t, append(common, "-crash")...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the crashing run ended with %v, want SIGKILL:\n%s", err, out)
			}
			inDoubt := "call ledger__add_entry (call_refund_42): [in_doubt] call refund-42:call_refund_42 was sent but its outcome is unknown; it will not be sent again automatically\n"
			for _, want := range []string{
				"run refund-42 with " + name + " (its local wire-format server on 127.0.0.1)\n" +
					"turns: 2 (1 replayed from the journal)\n" + inDoubt +
					"answer: " + answer + "\nmodel requests in this process: 1\nledger entries: 1\n",
				"run refund-42 with " + name + " (its local wire-format server on 127.0.0.1)\n" +
					"turns: 2 (2 replayed from the journal)\n" + inDoubt +
					"answer: " + answer + "\nmodel requests in this process: 0\nledger entries: 1\n",
			} {
				out, err := agent(t, common...)
				if err != nil || out != want {
					t.Fatalf("resume: %v\n got:\n%s\nwant:\n%s", err, out, want)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "ledger.txt"))
			if err != nil || string(b) != "-42\trefund order 42\trefund-42:call_refund_42\n" {
				t.Fatalf("the ledger: %q, %v", b, err)
			}
		})
	}
}

// TestRunToTheEnd: without a crash the run writes the entry once and
// answers; -fresh forgets it.
func TestRunToTheEnd(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		out, err := agent(t, "-dir", dir, "-fresh")
		want := "run refund-42 with openai (its local wire-format server on 127.0.0.1)\nturns: 2 (0 replayed from the journal)\n" +
			"call ledger__add_entry (call_refund_42): entry 1 written: -42 EUR, \"refund order 42\"\n" +
			"answer: " + answer + "\nmodel requests in this process: 2\nledger entries: 1\n"
		if err != nil || out != want {
			t.Fatalf("%v\n got:\n%s\nwant:\n%s", err, out, want)
		}
	}
}

// TestBadFlags: a wrong provider or -real without a key is refused with a
// clear error before anything runs.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	for args, want := range map[string]string{
		"-provider nope":         `unknown -provider "nope": one of `,
		"-real -provider openai": "-real needs OPENAI_API_KEY in the environment",
	} {
		var sb strings.Builder
		t.Setenv("OPENAI_API_KEY", "")
		err := run(context.Background(), append(strings.Fields(args), "-dir", dir), &sb)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ledger.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote the ledger: %v", err)
	}
}
