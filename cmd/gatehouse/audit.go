package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/store"
)

func newAuditCmd() *cobra.Command {
	return groupCmd("audit", "Verify or export the audit trail in the store",
		newAuditVerifyCmd(), newAuditExportCmd(), newAuditKeygenCmd())
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
}

type auditProblemJSON struct {
	Chain string `json:"chain"`
	Seq   int64  `json:"seq"`
	What  string `json:"what"`
}

func newAuditVerifyCmd() *cobra.Command {
	var sf storeFlags
	var keyFile, chain string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--public-key FILE] [--chain C]",
		Short: "Check every chain of the audit trail; exit 1 with the first broken entry",
		Long: "verify reads every chain of the audit trail in order and checks each entry's hash, its link to the\n" +
			"entry before, that no entry is missing and that a chain cut by retention starts after a checkpoint.\n" +
			"With --public-key (the Ed25519 key of the gateway's audit.signingKey, PEM or base64), every\n" +
			"checkpoint must carry a signature by that key. Exit 0 when everything verifies, 1 with the first\n" +
			"broken entry (chain, seq, what is wrong) otherwise.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			res, err := audit.Verify(cmd.Context(), st, &audit.VerifyOptions{PublicKey: pub, Chain: chain})
			if err != nil {
				return err
			}
			out := auditVerifyJSON{OK: res.Problem == nil, Chains: []auditChainJSON{}}
			if pub != nil {
				out.KeyID = audit.KeyID(pub)
			}
			for _, c := range res.Chains {
				out.Chains = append(out.Chains, auditChainJSON{c.Chain, c.First, c.Last, c.Entries, c.Checkpoints, c.Signed})
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
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"ok", "chains", "problem"}`)
	return cmd
}

func printVerify(w io.Writer, out auditVerifyJSON, signed bool) {
	for _, c := range out.Chains {
		sig := ""
		if signed {
			sig = fmt.Sprintf(", %d signed by key %s", c.Signed, out.KeyID)
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

// auditOperator appends an operator's action (a decision, a trust, a
// purge) to the operators' chain. The action is done: a failure to record
// it is reported, not undone.
func auditOperator(ctx context.Context, st store.AuditStore, stderr io.Writer, e store.AuditEntry) {
	if _, err := audit.AppendOne(ctx, st, audit.OperatorChain, e); err != nil {
		fmt.Fprintf(stderr, "gatehouse: warning: the audit trail did not record the %s: %v\n", e.Kind, err)
	}
}
