package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/dsn"
)

// storeFlags are the flags every command that reads the store shares. The
// DSN is chosen as: --store, else $GATEHOUSE_STORE, else the config file's
// store, else the default (sqlite:.gatehouse/gatehouse.db beside the config,
// or in the working directory).
type storeFlags struct {
	config string
	store  string
}

func (f *storeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", "", "gateway config file (YAML); its store: field names the store")
	cmd.Flags().StringVar(&f.store, "store", "", "store DSN (sqlite:PATH, postgres://...); overrides $GATEHOUSE_STORE and the config")
}

// loadConfig returns the config named by --config, or the default config
// rooted at the working directory.
func (f *storeFlags) loadConfig() (*gateway.Config, error) {
	if f.config != "" {
		return gateway.LoadConfig(f.config)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return gateway.ParseConfig(nil, "", wd)
}

// dsn resolves the store DSN by the precedence above.
func (f *storeFlags) dsn() (string, error) {
	if f.store != "" {
		return f.store, nil
	}
	cfg, err := f.loadConfig()
	if err != nil {
		return "", err
	}
	return store.DSNFromEnv(cfg.StoreDSN()), nil
}

// open opens the store, which must exist: an operator command creates no
// store (openStore).
func (f *storeFlags) open(ctx context.Context) (store.Store, error) {
	d, err := f.dsn()
	if err != nil {
		return nil, err
	}
	return openStore(ctx, d, false)
}

// openStore opens the store d names. With create (the gateway,
// `gatehouse tools`, `gatehouse store init`) it creates the store when
// there is none: sqlite.Open makes the file (0600) and its folder (0700)
// when the folder's parent exists. Without, a DSN naming no Gatehouse
// store is an error saying so (a noStoreError) and nothing is created:
// no file, folder or table.
func openStore(ctx context.Context, d string, create bool) (store.Store, error) {
	parsed, err := store.ParseDSN(d)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if !create && parsed.Kind == store.KindMemory {
		return nil, usagef("a memory: store holds nothing for this command: it lives and dies with the process that opens it (name the gateway's store: sqlite:PATH or postgres://...)")
	}
	st, err := dsn.Open(ctx, d, &store.Options{MustExist: !create})
	switch {
	case errors.Is(err, store.ErrNoStore):
		return nil, &noStoreError{err}
	case err != nil:
		return nil, fmt.Errorf("opening store %s: %w", parsed, err)
	}
	return st, nil
}

// noStoreError is an operator command's error for a DSN that names no
// Gatehouse store; it says what to do and wraps store.ErrNoStore.
type noStoreError struct{ err error }

func (e *noStoreError) Error() string {
	return strings.TrimPrefix(e.err.Error(), "store: ") + "; start the gateway (gatehouse serve) or create one with gatehouse store init"
}

func (e *noStoreError) Unwrap() error { return e.err }

// defaultOperator names the person running an admin command, for the
// record of who decided: the OS user and host ("alice@ops-1"), from
// os/user and os.Hostname ($USER, then "operator", when the user cannot
// be looked up; the user alone when the host is unknown).
func defaultOperator() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = "operator"
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		return name + "@" + host
	}
	return name
}
