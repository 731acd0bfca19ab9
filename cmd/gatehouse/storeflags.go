package main

import (
	"context"
	"fmt"
	"os"
	"os/user"

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

// open opens the store, creating the directory of a SQLite file.
func (f *storeFlags) open(ctx context.Context) (store.Store, error) {
	d, err := f.dsn()
	if err != nil {
		return nil, err
	}
	return openStore(ctx, d)
}

func openStore(ctx context.Context, d string) (store.Store, error) {
	parsed, err := store.ParseDSN(d)
	if err != nil {
		return nil, usagef("%v", err)
	}
	// A SQLite file's missing directories are created by sqlite.Open
	// (0700, the file 0600, whatever the umask).
	st, err := dsn.Open(ctx, d, nil)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", parsed, err)
	}
	return st, nil
}

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
