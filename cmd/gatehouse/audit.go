package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

func newAuditCmd() *cobra.Command {
	return groupCmd("audit", "Verify or export the audit trail in the store",
		newAuditVerifyCmd(), newAuditHeadCmd(), newAuditExportCmd(), newAuditKeygenCmd())
}

// auditVerifyJSON is `audit verify --json`.
type auditVerifyJSON struct {
	OK      bool              `json:"ok"`
	Chains  []auditChainJSON  `json:"chains"`
	Problem *auditProblemJSON `json:"problem,omitempty"`
	KeyID   string            `json:"keyId,omitempty"`
}

type auditChainJSON struct {
	Chain       string `json:"chain"`
	First       int64  `json:"first"`
	Last        int64  `json:"last"`
	Entries     int64  `json:"entries"`
	Checkpoints int    `json:"checkpoints"`
	Signed      int    `json:"signed"`
	Linked      int    `json:"linked"`
	// HeadSeq is the seq of the --expect-head checkpoint found in the
	// chain (0 when the head names no such chain).
	HeadSeq int64 `json:"headSeq,omitempty"`
}

type auditProblemJSON struct {
	Chain string `json:"chain"`
	Seq   int64  `json:"seq"`
	What  string `json:"what"`
}

func newAuditVerifyCmd() *cobra.Command {
	var sf storeFlags
	var keyFile, chain, headFile string
	var expect []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--public-key FILE] [--chain C] [--expect-chain C]... [--expect-head FILE]",
		Short: "Check every chain of the audit trail; exit 1 with the first broken entry",
		Long: "verify reads every chain of the audit trail in order and checks each entry's hash, its link to the\n" +
			"entry before, that no entry is missing, that a chain cut by retention starts after a checkpoint, and\n" +
			"that every checkpoint a later one links to is still there. With --public-key (the Ed25519 key of the\n" +
			"gateway's audit.signingKey, PEM or base64), every checkpoint must carry a signature by that key and\n" +
			"every chain at least one checkpoint. --expect-chain names a chain that must be there; --expect-head\n" +
			"a file written by `gatehouse audit head`, whose chains must be there and still hold its checkpoints\n" +
			"(a chain whose end was cut with its checkpoints fails). Exit 0 when everything verifies, 1 with the\n" +
			"first broken entry (chain, seq, what is wrong) otherwise.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var head *audit.Head
			if headFile != "" {
				b, err := readBounded(headFile, audit.MaxHeadFile)
				if err != nil {
					return usagef("--expect-head: %v", err)
				}
				if head, err = audit.ParseHead(b); err != nil {
					return usagef("--expect-head %s: %v", headFile, err)
				}
			}
			for _, c := range expect {
				if c == "" {
					return usagef("--expect-chain needs a chain's name")
				}
			}
			var pub ed25519.PublicKey
			if keyFile != "" {
				b, err := os.ReadFile(keyFile)
				if err != nil {
					return usagef("--public-key: %v", err)
				}
				if pub, err = audit.ParsePublicKey(b); err != nil {
					return usagef("--public-key %s: %v", keyFile, err)
				}
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			res, err := audit.Verify(cmd.Context(), st, &audit.VerifyOptions{PublicKey: pub, Chain: chain, ExpectChains: expect, ExpectHead: head})
			if err != nil {
				return err
			}
			out := auditVerifyJSON{OK: res.Problem == nil, Chains: []auditChainJSON{}}
			if pub != nil {
				out.KeyID = audit.KeyID(pub)
			}
			for _, c := range res.Chains {
				out.Chains = append(out.Chains, auditChainJSON{c.Chain, c.First, c.Last, c.Entries, c.Checkpoints, c.Signed, c.Linked, c.HeadSeq})
			}
			if p := res.Problem; p != nil {
				out.Problem = &auditProblemJSON{p.Chain, p.Seq, p.What}
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
					return err
				}
			} else {
				printVerify(cmd.OutOrStdout(), out, pub != nil)
			}
			if res.Problem != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "gatehouse: the audit trail does not verify: chain %q, seq %d: %s\n", res.Problem.Chain, res.Problem.Seq, res.Problem.What)
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&keyFile, "public-key", "", "the Ed25519 public key every checkpoint must be signed by (PEM or base64)")
	cmd.Flags().StringVar(&chain, "chain", "", "verify this chain only")
	cmd.Flags().StringArrayVar(&expect, "expect-chain", nil, "a chain that must be in the store (repeatable): one deleted whole fails")
	cmd.Flags().StringVar(&headFile, "expect-head", "", "a head file of `gatehouse audit head`: its chains must be there and still hold its checkpoints")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"ok", "chains", "problem"}`)
	return cmd
}

func printVerify(w io.Writer, out auditVerifyJSON, signed bool) {
	for _, c := range out.Chains {
		sig := ""
		if signed {
			sig = fmt.Sprintf(", %d signed by key %s", c.Signed, out.KeyID)
		}
		if c.Linked > 0 {
			sig += fmt.Sprintf(", %d linked", c.Linked)
		}
		if c.HeadSeq > 0 {
			sig += fmt.Sprintf(", holds the head's checkpoint at seq %d", c.HeadSeq)
		}
		fmt.Fprintf(w, "chain %s: seq %d-%d, %d entries, %d checkpoints%s\n", c.Chain, c.First, c.Last, c.Entries, c.Checkpoints, sig)
	}
	if out.Problem != nil {
		fmt.Fprintf(w, "BROKEN chain %s seq %d: %s\n", out.Problem.Chain, out.Problem.Seq, out.Problem.What)
		return
	}
	if len(out.Chains) == 0 {
		fmt.Fprintln(w, "(no audit entries)")
	}
	fmt.Fprintln(w, "ok: the audit trail verifies")
}

func newAuditExportCmd() *cobra.Command {
	var sf storeFlags
	var since, format string
	var f store.AuditFilter
	cmd := &cobra.Command{
		Use:   "export [--since T] [--format jsonl|otel]",
		Short: "Stream the audit trail (one JSON document per line) for a SIEM",
		Long: "export writes the entries of the audit trail in the order they were committed, one per line:\n" +
			"--format jsonl (the default) an object per entry; --format otel an OTLP/JSON logs document\n" +
			"({\"resourceLogs\": [...]}, one log record) per entry, each line fit to POST to a collector's /v1/logs.\n" +
			"--since takes an RFC 3339 time, a date (YYYY-MM-DD, UTC) or a duration before now (24h, 7d).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != audit.FormatJSONL && format != audit.FormatOTel {
				return usagef("--format %q: want jsonl or otel", format)
			}
			if cmd.Flags().Changed("since") {
				t, err := audit.ParseSince(since, time.Now())
				if err != nil {
					return usagef("%v", err)
				}
				f.Since = t
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = audit.Export(cmd.Context(), st, cmd.OutOrStdout(), &audit.ExportOptions{Filter: f, Format: format})
			return err
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&since, "since", "", "entries at or after this time (RFC 3339, YYYY-MM-DD, or a duration ago: 24h, 7d)")
	cmd.Flags().StringVar(&format, "format", audit.FormatJSONL, "jsonl or otel (OTLP/JSON logs)")
	cmd.Flags().StringVar(&f.Subject, "subject", "", "only the entries of this subject")
	cmd.Flags().StringVar(&f.Kind, "kind", "", "only the entries of this kind (call, refusal, approval.decided, ...)")
	cmd.Flags().StringVar(&f.Chain, "chain", "", "only the entries of this chain")
	return cmd
}

func newAuditKeygenCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "keygen --out FILE",
		Short: "Make an Ed25519 key for audit checkpoints: the private key to FILE (0600), the public key to stdout",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("audit keygen needs --out FILE")
			}
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			pemPriv, err := audit.MarshalPrivateKey(priv)
			if err != nil {
				return err
			}
			pemPub, err := audit.MarshalPublicKey(pub)
			if err != nil {
				return err
			}
			fh, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("audit keygen: %w", err)
			}
			if _, err := fh.Write(pemPriv); err != nil {
				fh.Close()
				return err
			}
			if err := fh.Close(); err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(pemPub)
			return err
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "where to write the private key (must not exist)")
	return cmd
}

// newAuditHeadCmd is `audit head`: the latest signed checkpoint of every
// chain, to keep outside the store.
func newAuditHeadCmd() *cobra.Command {
	var sf storeFlags
	var out string
	cmd := &cobra.Command{
		Use:   "head [--out FILE]",
		Short: "Write the latest signed checkpoint of every chain (JSON), to keep outside the store",
		Long: "head writes the latest signed checkpoint of every chain of the audit trail (chain, seq, hash, time,\n" +
			"key ID, signature) as JSON, to stdout or to --out FILE (replaced whole). Keep it where the store's\n" +
			"writers cannot reach, and later run `gatehouse audit verify --expect-head FILE`: a chain deleted, or\n" +
			"cut at its end together with its checkpoints, or rewritten since, then fails. Run `audit verify\n" +
			"--public-key` first: head records what the store holds. A chain with no signed checkpoint is\n" +
			"named on stderr and left out; when no chain has one, head writes nothing and exits 1.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			head, unsigned, err := audit.LatestHead(cmd.Context(), st, time.Now())
			if err != nil {
				return err
			}
			for _, c := range unsigned {
				fmt.Fprintf(cmd.ErrOrStderr(), "gatehouse: warning: chain %q has no signed checkpoint: not in the head\n", c)
			}
			if len(head.Chains) == 0 {
				return errors.New("no chain of the audit trail has a signed checkpoint: nothing to write (sign checkpoints with audit.signingKeyFile or audit.signingKeyEnv)")
			}
			b, err := head.Marshal()
			if err != nil {
				return err
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return writeFileAtomic(out, b)
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&out, "out", "", "write the head to FILE (replacing it whole) instead of stdout")
	return cmd
}

// writeFileAtomic writes b to path through a temporary file in its folder
// renamed over it, so that a reader sees the old file or the new one.
func writeFileAtomic(path string, b []byte) error {
	fh, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(fh.Name())
	if _, err := fh.Write(b); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Chmod(0o644); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	return os.Rename(fh.Name(), path)
}

// readBounded reads a file of at most limit bytes (one more is read, so
// that ParseHead can say the file is too large).
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, limit+1))
}

// operatorKey reads the key that signs the audit checkpoints, from the
// config the command reads (--config, or the default one in the working
// directory): audit.signingKeyFile or audit.signingKeyEnv. Nil when the
// config names none.
func operatorKey(sf *storeFlags) (ed25519.PrivateKey, error) {
	cfg, err := sf.loadConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the config for the audit signing key: %w", err)
	}
	return auditSigningKey(cfg)
}

// auditSigningKey reads cfg's audit.signingKeyFile or audit.signingKeyEnv
// (nil when neither is set).
func auditSigningKey(cfg *gateway.Config) (ed25519.PrivateKey, error) {
	return audit.ReadSigningKey(cfg.Audit.SigningKeyFile, cfg.Audit.SigningKeyEnv)
}

// auditOperator appends an operator's action (a decision, a trust, a
// purge) to the operators' chain, and checkpoints the chain at it, signed
// with the key of the command's config (operatorKey). The action is done: a
// failure to record it is reported, not undone. A config that names a key
// the command cannot read (a file readable by the gateway only, a variable
// unset here) is said so, and the entry is still appended, without a
// checkpoint: an unsigned checkpoint would make `audit verify --public-key`
// refuse the operators' chain for good, while an entry after the last
// checkpoint is covered by the next signed one. A config that names no key
// gives an unsigned checkpoint, unless the store's checkpoints are signed
// (audit.AppendCheckpointed).
func auditOperator(ctx context.Context, sf *storeFlags, st store.AuditStore, stderr io.Writer, e store.AuditEntry) {
	key, kerr := operatorKey(sf)
	if kerr != nil {
		fmt.Fprintf(stderr, "gatehouse: warning: the audit signing key cannot be read (%v): the %s is recorded without a signed checkpoint (run the command as a user who can read the gateway's key, with its --config)\n", kerr, e.Kind)
		if _, err := audit.AppendOne(ctx, st, audit.OperatorChain, e); err != nil {
			fmt.Fprintf(stderr, "gatehouse: warning: the audit trail did not record the %s: %v\n", e.Kind, err)
		}
		return
	}
	_, err := audit.AppendCheckpointed(ctx, st, audit.OperatorChain, e, key)
	switch {
	case errors.Is(err, audit.ErrNotCheckpointed):
		fmt.Fprintf(stderr, "gatehouse: warning: the audit trail recorded the %s without a checkpoint: %v (give the command the gateway's config, --config, so that it signs with its key)\n", e.Kind, err)
	case err != nil:
		fmt.Fprintf(stderr, "gatehouse: warning: the audit trail did not record the %s: %v\n", e.Kind, err)
	}
}
