package upauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/store"
)

// StoreFlows keeps connect flows in a store (single use across the
// replicas sharing it), their state sealed by the vault and bound to the
// flow's ID, server and subject: a flow row copied or edited does not
// open.
type StoreFlows struct {
	St    store.ConnectionStore
	Vault *vault.Vault
}

var _ Flows = StoreFlows{}

// flowAAD binds a flow's sealed state to the flow.
func flowAAD(id, server, subject string) string {
	return fmt.Sprintf("connect-flow\x00%d:%s\x00%d:%s\x00%d:%s", len(id), id, len(server), server, len(subject), subject)
}

// PutFlow implements [Flows]. The sealed bytes are the key ID, a NUL, a
// kind byte (0: a connect URL, 1: an authorization in progress) and the
// state, sealed.
func (s StoreFlows) PutFlow(ctx context.Context, f Flow) error {
	kind := byte(0)
	if f.State != nil {
		kind = 1
	}
	keyID, sealed, err := s.Vault.Seal(flowAAD(f.ID, f.Server, f.Subject), append([]byte{kind}, f.State...))
	if err != nil {
		return err
	}
	blob := append(append([]byte(keyID), 0), sealed...)
	return s.St.PutConnectFlow(ctx, store.ConnectFlow{ID: f.ID, Server: f.Server, Subject: f.Subject, Sealed: blob, ExpiresAt: f.ExpiresAt})
}

// TakeFlow implements [Flows]: a flow whose state does not open is an
// error (and spent).
func (s StoreFlows) TakeFlow(ctx context.Context, id string, now time.Time) (Flow, bool, error) {
	cf, ok, err := s.St.TakeConnectFlow(ctx, id, now)
	if err != nil || !ok {
		return Flow{}, false, err
	}
	keyID, sealed, found := bytes.Cut(cf.Sealed, []byte{0})
	if !found {
		return Flow{}, false, errors.New("upauth: a connect flow's state has no key ID")
	}
	pt, err := s.Vault.Open(flowAAD(id, cf.Server, cf.Subject), string(keyID), sealed)
	if err != nil {
		return Flow{}, false, fmt.Errorf("upauth: a connect flow's state: %w", err)
	}
	if len(pt) == 0 {
		return Flow{}, false, errors.New("upauth: a connect flow's state is empty")
	}
	f := Flow{ID: id, Server: cf.Server, Subject: cf.Subject, ExpiresAt: cf.ExpiresAt}
	if pt[0] == 1 {
		f.State = pt[1:]
	}
	return f, true, nil
}
