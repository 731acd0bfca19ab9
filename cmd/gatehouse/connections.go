package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/store"
)

// newConnectionsCmd is `gatehouse connections list|revoke|rekey`: the
// token vault's connections, seen and managed through the store. No token
// is ever printed.
func newConnectionsCmd() *cobra.Command {
	return groupCmd("connections", "List, revoke or re-encrypt the upstream connections in the token vault",
		newConnectionsListCmd(), newConnectionsRevokeCmd(), newConnectionsRekeyCmd())
}

// vaultFlags name the vault's keys: --key-file, else GATEHOUSE_SECRET_KEY
// and GATEHOUSE_SECRET_KEY_PREVIOUS.
type vaultFlags struct {
	keyFile string
}

func (f *vaultFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.keyFile, "key-file", "", "the vault's key file (current key, then the previous one); default $"+vault.EnvKey+" and $"+vault.EnvPreviousKey)
}

func (f *vaultFlags) keys() (*vault.Keys, error) {
	return vault.LoadKeys(&vault.KeyOptions{File: f.keyFile})
}

// connectionJSON is one connection in `connections list --json`. Expiry,
// scopes and whether there is a refresh token are read from the sealed set
// when the key is available; never a token.
type connectionJSON struct {
	Server  string `json:"server"`
	Subject string `json:"subject"`
	Service bool   `json:"service,omitempty"`
	// Account is the upstream account the connection holds, as the
	// gateway learned it when a subject connected through a connect URL
	// (the upstream ID token's issuer#sub); empty when unknown.
	Account         string     `json:"account,omitempty"`
	KeyID           string     `json:"keyId"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
	ExpiresAt       *time.Time `json:"expiresAt,omitempty"`
	Scopes          []string   `json:"scopes,omitempty"`
	HasRefreshToken *bool      `json:"refreshToken,omitempty"`
	// Sealed says why the set could not be opened ("no key", or the
	// error), when it could not.
	Sealed string `json:"sealed,omitempty"`
}

func newConnectionsListCmd() *cobra.Command {
	var sf storeFlags
	var vf vaultFlags
	var subject string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--subject S] [--json]",
		Short: "List connections: server, subject, upstream account, when, and (with the key) expiry and scopes; never a token",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("subject") && subject == "" {
				return usagef(`--subject "" is not a subject; the service connections are listed without --subject`)
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			cs, err := st.Connections(cmd.Context(), subject)
			if err != nil {
				return err
			}
			var v *vault.Vault
			keyErr := "no key"
			if ks, err := vf.keys(); err == nil {
				v = vault.New(st, ks, nil)
			} else if !isUnset(err) {
				keyErr = err.Error()
				fmt.Fprintf(cmd.ErrOrStderr(), "gatehouse: warning: %v; expiry and scopes are not shown\n", err)
			}
			out := make([]connectionJSON, 0, len(cs))
			for _, c := range cs {
				j := connectionJSON{Server: c.Server, Subject: c.Subject, Service: c.Subject == "", Account: c.Account, KeyID: c.KeyID,
					CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(), Sealed: keyErr}
				if v != nil {
					if set, err := v.OpenConnection(c); err != nil {
						j.Sealed = err.Error()
					} else {
						j.Sealed = ""
						if !set.Expiry.IsZero() {
							e := set.Expiry.UTC()
							j.ExpiresAt = &e
						}
						j.Scopes = slices.Clone(set.Scopes)
						hasRT := set.RefreshToken != ""
						j.HasRefreshToken = &hasRT
					}
				}
				out = append(out, j)
			}
			auditOperator(cmd.Context(), &sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindConnectionsList,
				Subject: defaultOperator(), Outcome: "ok", Detail: audit.Detail(map[string]any{"subject": subject, "connections": len(out)})})
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"connections": out})
			}
			return printConnections(cmd.OutOrStdout(), out)
		},
	}
	sf.add(cmd)
	vf.add(cmd)
	cmd.Flags().StringVar(&subject, "subject", "", "only the connections of this subject")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"connections": [...]}`)
	return cmd
}

// isUnset reports a KeyError that only says the key is not configured.
func isUnset(err error) bool {
	var ke *vault.KeyError
	return errors.As(err, &ke) && ke.Source == vault.EnvKey && strings.HasPrefix(ke.Reason, "not set")
}

func printConnections(w io.Writer, cs []connectionJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSUBJECT\tACCOUNT\tCREATED\tUPDATED\tEXPIRES\tSCOPES\tREFRESH")
	for _, c := range cs {
		sub := c.Subject
		if c.Service {
			sub = "(service)"
		}
		exp, scopes, rt := "-", "-", "-"
		switch {
		case c.Sealed != "":
			exp, scopes, rt = "(sealed)", "(sealed)", "(sealed)"
		default:
			if c.ExpiresAt != nil {
				exp = c.ExpiresAt.Format(time.RFC3339)
			}
			if len(c.Scopes) > 0 {
				scopes = fmt.Sprint(c.Scopes)
			}
			if c.HasRefreshToken != nil && *c.HasRefreshToken {
				rt = "yes"
			} else {
				rt = "no"
			}
		}
		account := c.Account
		if account == "" {
			account = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Server, sub, account, c.CreatedAt.Format(time.RFC3339),
			c.UpdatedAt.Format(time.RFC3339), exp, scopes, rt)
	}
	if len(cs) == 0 {
		fmt.Fprintln(tw, "(no connections)")
	}
	return tw.Flush()
}

func newConnectionsRevokeCmd() *cobra.Command {
	var sf storeFlags
	var subject, server string
	var service, all bool
	cmd := &cobra.Command{
		Use:   "revoke (--subject S | --service | --all) [--server X]",
		Short: "Delete connections from the vault (a subject's, the service ones, or all; of one server with --server) and say how many",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n := 0
			for _, set := range []bool{cmd.Flags().Changed("subject"), service, all} {
				if set {
					n++
				}
			}
			if n != 1 {
				return usagef("connections revoke needs exactly one of --subject S, --service (the gateway's own connections) or --all")
			}
			if cmd.Flags().Changed("subject") && subject == "" {
				return usagef(`--subject "" is not a subject; use --service for the gateway's own connections`)
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			ctx := cmd.Context()
			var deleted int
			switch {
			case all:
				deleted, err = revokeAll(ctx, st, server)
			default: // a subject, or the service subject ""
				deleted, err = st.DeleteConnections(ctx, server, subject)
			}
			if err != nil {
				return err
			}
			who := subject
			switch {
			case all:
				who = "every subject"
			case service:
				who = "the service"
			}
			detail := map[string]any{"subject": subject, "server": server, "deleted": deleted}
			if all {
				detail["all"] = true
			}
			auditOperator(ctx, &sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindConnectionsRevoke, Subject: defaultOperator(),
				Server: server, Outcome: "ok", Detail: audit.Detail(detail)})
			of := ""
			if server != "" {
				of = fmt.Sprintf(" to %s", server)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "revoked %d connections%s of %s\n", deleted, of, quoteSubject(who, all || service))
			return err
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&subject, "subject", "", "revoke this subject's connections")
	cmd.Flags().BoolVar(&service, "service", false, "revoke the gateway's own (auth: service) connections")
	cmd.Flags().BoolVar(&all, "all", false, "revoke every subject's connections, the service ones included")
	cmd.Flags().StringVar(&server, "server", "", "only the connections to this server")
	return cmd
}

func quoteSubject(who string, bare bool) string {
	if bare {
		return who
	}
	return fmt.Sprintf("subject %q", who)
}

// revokeAll deletes every connection (of server, when set).
func revokeAll(ctx context.Context, st store.ConnectionStore, server string) (int, error) {
	cs, err := st.Connections(ctx, "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cs {
		if server != "" && c.Server != server {
			continue
		}
		d, err := st.DeleteConnections(ctx, c.Server, c.Subject)
		if err != nil {
			return n, err
		}
		n += d
	}
	return n, nil
}

func newConnectionsRekeyCmd() *cobra.Command {
	var sf storeFlags
	var vf vaultFlags
	cmd := &cobra.Command{
		Use:   "rekey",
		Short: "Re-encrypt every connection under the current key (the previous key configured to open the old ones)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ks, err := vf.keys()
			if err != nil {
				return err
			}
			st, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			n, rerr := vault.New(st, ks, nil).Rekey(cmd.Context())
			outcome := "ok"
			if rerr != nil {
				outcome = "error"
			}
			auditOperator(cmd.Context(), &sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindConnectionsRekey, Subject: defaultOperator(),
				Outcome: outcome, Detail: audit.Detail(map[string]any{"rekeyed": n, "key": ks.CurrentID()})})
			fmt.Fprintf(cmd.OutOrStdout(), "re-encrypted %d connections under key %s\n", n, ks.CurrentID())
			if rerr != nil {
				return fmt.Errorf("some connections could not be re-encrypted (configure the key that sealed them as the previous key): %w", rerr)
			}
			return nil
		},
	}
	sf.add(cmd)
	vf.add(cmd)
	return cmd
}
