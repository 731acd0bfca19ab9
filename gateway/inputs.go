package gateway

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/inputstate"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// inputSealer returns what seals the requestState of the input requests
// (SEP-2322) an upstream makes of a caller at 2026-07-28 (the relay's
// input.go, the pipeline for tools/call): keys derived from the vault's
// (connect.keyFile, else GATEHOUSE_SECRET_KEY), so that every replica
// with the same key opens what another sealed. Without either, a key of
// this process's own: its states open only here (one replica).
func inputSealer(cfg *Config, log *slog.Logger, now func() time.Time) (*inputstate.Sealer, error) {
	ko := &vault.KeyOptions{}
	if f := cfg.Connect.KeyFile; f != "" {
		if !filepath.IsAbs(f) {
			f = filepath.Join(cfg.Dir, f)
		}
		ko.File = f
	} else if strings.TrimSpace(os.Getenv(vault.EnvKey)) == "" {
		k := make([]byte, vault.KeySize)
		_, _ = rand.Read(k) // never fails (crypto/rand)
		keys, err := vault.NewKeys(k, nil)
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		log.Info("gateway: " + vault.EnvKey + " is not set: the requestState of input requests passed to 2026-07-28 callers is sealed with a key of this process, and a retry reaching another replica (or this one restarted) is refused; set it alike on every replica")
		return inputstate.New(keys.Derive(inputstate.Purpose), &inputstate.Options{Now: now}), nil
	}
	keys, err := vault.LoadKeys(ko)
	if err != nil {
		return nil, fmt.Errorf("gateway: the requestState of input requests is sealed with the vault's key: %w", err)
	}
	return inputstate.New(keys.Derive(inputstate.Purpose), &inputstate.Options{Now: now}), nil
}
