package vault

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/store"
)

// ErrSealed is wrapped by every error of a blob that does not open: sealed
// under a key the vault does not hold, tampered with, truncated, or bound
// to another (server, subject). It never carries the blob or plaintext.
var ErrSealed = errors.New("vault: sealed data does not open")

// ErrUnknownKey is wrapped (with ErrSealed) when the blob names a key the
// vault holds neither as current nor as previous.
var ErrUnknownKey = errors.New("vault: sealed under a key this vault does not hold")

// OpenError is the error of a blob that does not open. It wraps ErrSealed,
// and ErrUnknownKey when the key is the reason.
type OpenError struct {
	// AAD is what the blob was to be bound to (for a connection,
	// "connection" with its server and subject); KeyID the key it names.
	AAD, KeyID string
	// Reason says why, in words.
	Reason  string
	unknown bool
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("vault: %s (key %q) does not open: %s", e.AAD, e.KeyID, e.Reason)
}

// Unwrap returns ErrSealed, and ErrUnknownKey when the key is unknown.
func (e *OpenError) Unwrap() []error {
	if e.unknown {
		return []error{ErrSealed, ErrUnknownKey}
	}
	return []error{ErrSealed}
}

// Options configure a Vault. A nil *Options means defaults.
type Options struct {
	// LeaseTTL is how long a refresh lease holds (LockRefresh) before
	// another replica may take it over, should its holder die mid-refresh.
	// Zero means 15 seconds.
	LeaseTTL time.Duration
	// Holder names this vault as a lease holder (a replica's instance
	// name); each LockRefresh appends a sequence number. Empty means a
	// random name.
	Holder string
}

// Vault keeps token sets in a store.ConnectionStore, sealed with AES-256-GCM
// under the current key, each bound (as additional authenticated data) to
// its server and subject. It implements [upstream.TokenStore] and
// [upstream.RefreshLocker]. Safe for concurrent use.
type Vault struct {
	st     store.ConnectionStore
	keys   *Keys
	ttl    time.Duration
	holder string
	seq    atomic.Uint64
}

var (
	_ upstream.TokenStore    = (*Vault)(nil)
	_ upstream.RefreshLocker = (*Vault)(nil)
)

// New returns a Vault over st with keys.
func New(st store.ConnectionStore, keys *Keys, opts *Options) *Vault {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.Holder == "" {
		b := make([]byte, 8)
		rand.Read(b)
		o.Holder = "vault-" + hex.EncodeToString(b)
	}
	return &Vault{st: st, keys: keys, ttl: o.LeaseTTL, holder: o.Holder}
}

// Keys returns the vault's keys.
func (v *Vault) Keys() *Keys { return v.keys }

const sealVersion = 1

// fullAAD binds a blob to its version, key and purpose.
func fullAAD(aad, keyID string) []byte {
	return fmt.Appendf(nil, "gatehouse/vault/v%d\x00%s\x00%s", sealVersion, keyID, aad)
}

// Seal encrypts plaintext under the current key, bound to aad: Open with
// another aad fails. It returns the key's ID (to store beside the blob)
// and the blob: a version byte, a random 12-byte nonce, the ciphertext and
// its tag.
func (v *Vault) Seal(aad string, plaintext []byte) (keyID string, sealed []byte, err error) {
	return v.keys.Seal(aad, plaintext)
}

// Open decrypts a blob Seal made with the same aad, under the key keyID
// names (current or previous). Any failure is an [*OpenError] wrapping
// ErrSealed.
func (v *Vault) Open(aad, keyID string, sealed []byte) ([]byte, error) {
	return v.keys.Open(aad, keyID, sealed)
}

// Seal encrypts plaintext under the current key, bound to aad, as
// [Vault.Seal] does.
func (ks *Keys) Seal(aad string, plaintext []byte) (keyID string, sealed []byte, err error) {
	k := ks.current
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("vault: nonce: %w", err)
	}
	out := append([]byte{sealVersion}, nonce...)
	return k.id, k.aead.Seal(out, nonce, plaintext, fullAAD(aad, k.id)), nil
}

// Open decrypts a blob [Keys.Seal] made with the same aad, under the key
// keyID names (current or previous), as [Vault.Open] does.
func (ks *Keys) Open(aad, keyID string, sealed []byte) ([]byte, error) {
	fail := func(reason string) error { return &OpenError{AAD: printable(aad), KeyID: keyID, Reason: reason} }
	k := ks.byID(keyID)
	if k == nil {
		return nil, &OpenError{AAD: printable(aad), KeyID: keyID, unknown: true,
			Reason: "the key is neither the current nor the previous one (configure the key that sealed it as the previous key)"}
	}
	ns := k.aead.NonceSize()
	if len(sealed) < 1+ns+k.aead.Overhead() {
		return nil, fail(fmt.Sprintf("%d bytes is too short", len(sealed)))
	}
	if sealed[0] != sealVersion {
		return nil, fail(fmt.Sprintf("unknown format version %d", sealed[0]))
	}
	pt, err := k.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], fullAAD(aad, keyID))
	if err != nil {
		return nil, fail("authentication failed (wrong key, tampered, or bound to another server or subject)")
	}
	return pt, nil
}

// printable quotes the AAD's NULs away for error messages.
func printable(aad string) string { return strconv.Quote(aad) }

// ConnectionAAD is what a connection's blob is bound to: its server and
// subject, length-prefixed so no two pairs share one.
func ConnectionAAD(server, subject string) string {
	return fmt.Sprintf("connection\x00%d:%s\x00%d:%s", len(server), server, len(subject), subject)
}

// connectionName names a connection in errors.
func connectionName(server, subject string) string {
	if subject == "" {
		return fmt.Sprintf("the service connection to %q", server)
	}
	return fmt.Sprintf("the connection of %q to %q", subject, server)
}

// sealedSet is the sealed form of an upstream.TokenSet.
type sealedSet struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
	TokenURL     string    `json:"token_url,omitempty"`
	ClientID     string    `json:"client_id,omitempty"`
	ClientSecret string    `json:"client_secret,omitempty"`
	AuthStyle    int       `json:"auth_style,omitempty"`
}

// Token implements [upstream.TokenStore]: the connection of (server,
// subject) opened, or nil when there is none. A row that does not open is
// an [*OpenError].
func (v *Vault) Token(ctx context.Context, server, subject string) (*upstream.TokenSet, error) {
	c, ok, err := v.st.Connection(ctx, server, subject)
	if err != nil || !ok {
		return nil, err
	}
	return v.OpenConnection(c)
}

// OpenConnection opens a connection row (as Connections lists them).
func (v *Vault) OpenConnection(c store.Connection) (*upstream.TokenSet, error) {
	pt, err := v.Open(ConnectionAAD(c.Server, c.Subject), c.KeyID, c.Sealed)
	if err != nil {
		var oe *OpenError
		if errors.As(err, &oe) {
			oe.AAD = connectionName(c.Server, c.Subject)
		}
		return nil, err
	}
	var s sealedSet
	if err := json.Unmarshal(pt, &s); err != nil {
		return nil, &OpenError{AAD: connectionName(c.Server, c.Subject), KeyID: c.KeyID, Reason: "the opened token set is not valid"}
	}
	return &upstream.TokenSet{AccessToken: s.AccessToken, TokenType: s.TokenType, RefreshToken: s.RefreshToken,
		Expiry: s.Expiry, Scopes: s.Scopes, TokenURL: s.TokenURL, ClientID: s.ClientID, ClientSecret: s.ClientSecret,
		AuthStyle: oauth2.AuthStyle(s.AuthStyle)}, nil
}

func (v *Vault) sealSet(server, subject string, t *upstream.TokenSet) (string, []byte, error) {
	pt, err := json.Marshal(sealedSet{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken,
		Expiry: t.Expiry, Scopes: slices.Clone(t.Scopes), TokenURL: t.TokenURL, ClientID: t.ClientID,
		ClientSecret: t.ClientSecret, AuthStyle: int(t.AuthStyle)})
	if err != nil {
		return "", nil, fmt.Errorf("vault: encoding the token set of %s: %w", server, err)
	}
	return v.Seal(ConnectionAAD(server, subject), pt)
}

// PutToken implements [upstream.TokenStore]: t sealed under the current
// key and stored as the connection of (server, subject).
func (v *Vault) PutToken(ctx context.Context, server, subject string, t *upstream.TokenSet) error {
	if t == nil {
		return errors.New("vault: PutToken of a nil token set")
	}
	id, sealed, err := v.sealSet(server, subject, t)
	if err != nil {
		return err
	}
	return v.st.PutConnection(ctx, store.Connection{Server: server, Subject: subject, Sealed: sealed, KeyID: id})
}

// PutConnected stores t as the connection of (server, subject) made
// through a connect flow, recording account, the upstream account it is
// for (store.Connection.Account). With account unknown ("") the row is
// deleted first, so that a connection made anew never shows the account
// of the one it replaces.
func (v *Vault) PutConnected(ctx context.Context, server, subject string, t *upstream.TokenSet, account string) error {
	if t == nil {
		return errors.New("vault: PutConnected of a nil token set")
	}
	id, sealed, err := v.sealSet(server, subject, t)
	if err != nil {
		return err
	}
	if account == "" {
		if _, err := v.st.DeleteConnections(ctx, server, subject); err != nil {
			return err
		}
	}
	return v.st.PutConnection(ctx, store.Connection{Server: server, Subject: subject, Sealed: sealed, KeyID: id, Account: account})
}

// DeleteToken implements [upstream.TokenStore].
func (v *Vault) DeleteToken(ctx context.Context, server, subject string) error {
	if server == "" {
		return errors.New("vault: DeleteToken needs a server")
	}
	_, err := v.st.DeleteConnections(ctx, server, subject)
	return err
}

// LockRefresh implements [upstream.RefreshLocker] through the store's
// LeaseRefresh: a lease of Options.LeaseTTL under a holder name unique to
// this call. unlock releases it (it is also released when it runs out).
func (v *Vault) LockRefresh(ctx context.Context, server, subject string) (unlock func(), ok bool, err error) {
	holder := fmt.Sprintf("%s/%d", v.holder, v.seq.Add(1))
	ok, err = v.st.LeaseRefresh(ctx, server, subject, holder, time.Now().Add(v.ttl))
	if err != nil || !ok {
		return nil, false, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Renewed to the past: released (at worst it runs out after TTL).
		_, _ = v.st.LeaseRefresh(ctx, server, subject, holder, time.Now().Add(-time.Millisecond))
	}, true, nil
}

// Rekey re-encrypts under the current key every connection sealed under
// another (the previous key), each by compare-and-swap so a concurrent
// refresh is never overwritten, and returns how many it re-encrypted.
// Rows that do not open are skipped and reported together in the error;
// the others are rekeyed all the same.
func (v *Vault) Rekey(ctx context.Context) (int, error) {
	cs, err := v.st.Connections(ctx, "")
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, c := range cs {
		done, err := v.rekeyOne(ctx, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("connection %s/%q: %w", c.Server, c.Subject, err))
		}
		if done {
			n++
		}
	}
	return n, errors.Join(errs...)
}

func (v *Vault) rekeyOne(ctx context.Context, c store.Connection) (bool, error) {
	for range 5 {
		if c.KeyID == v.keys.current.id {
			return false, nil
		}
		t, err := v.OpenConnection(c)
		if err != nil {
			return false, err
		}
		id, sealed, err := v.sealSet(c.Server, c.Subject, t)
		if err != nil {
			return false, err
		}
		ok, err := v.st.SwapConnection(ctx, store.Connection{Server: c.Server, Subject: c.Subject, Sealed: sealed,
			KeyID: id, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}, c.Sealed)
		if err != nil || ok {
			return ok, err
		}
		// Written meanwhile (a refresh, under the current key): look again.
		var found bool
		if c, found, err = v.st.Connection(ctx, c.Server, c.Subject); err != nil || !found {
			return false, err
		}
	}
	return false, errors.New("vault: rekey lost the race five times")
}
