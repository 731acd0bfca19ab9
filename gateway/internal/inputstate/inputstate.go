// Package inputstate seals the requestState of an upstream's multi
// round-trip request (SEP-2322) for a caller at 2026-07-28, so that any
// replica of the gateway can take the caller's retry without stored state.
//
//	s := inputstate.New(keys.Derive(inputstate.Purpose), nil)
//	b := inputstate.Binding{Server: "github", Subject: sub, Method: "tools/call", Name: tool,
//		Args: inputstate.Digest(args)}
//	token, err := s.Seal(b, upstreamState) // what the caller gets as requestState
//	...
//	upstreamState, err := s.Open(token, b) // the caller's retry, checked against its own binding
//
// A token is "ghs1." and the unpadded base64url of the sealing key's ID (8
// bytes) and the vault's blob (internal/vault: AES-256-GCM, a random nonce
// per seal, bound to this purpose and the key's ID). Sealed inside: the
// upstream server, the upstream's own requestState, the caller's subject,
// the method and the tool, prompt or URI, a digest of the arguments and an
// expiry. Opening checks each against the retry and says which one failed
// ([ErrMalformed], [ErrSealed], [ErrExpired], [ErrOtherCaller],
// [ErrOtherRequest]); no error quotes the token or what it holds.
package inputstate

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

// Purpose is the derivation label of the keys that seal request states
// (vault.Keys.Derive): they are not the token vault's keys.
const Purpose = "mcp input request state"

// DefaultTTL is how long a sealed state opens when Options.TTL is zero:
// the time a person has to answer an elicitation.
const DefaultTTL = 15 * time.Minute

// MaxToken bounds the length of a token Open reads (the upstream's own
// state is at most a little less).
const MaxToken = 256 << 10

// prefix starts every token.
const prefix = "ghs1."

// aad binds the blob to this purpose (the vault adds the key's ID).
const aad = "mcp-input-request-state/v1"

// keyIDLen is the length of a vault key ID in bytes.
const keyIDLen = 8

// The errors of Open: each says what is wrong with a retry's requestState,
// and none quotes it.
var (
	// ErrMalformed: not a token this gateway issues (no prefix, not
	// base64url, too short or too long, or what it seals is not a state).
	ErrMalformed = errors.New("requestState is not one this gateway issued")
	// ErrSealed: the token does not open: altered, or sealed under a key
	// this gateway does not hold (a replica with another
	// GATEHOUSE_SECRET_KEY, or one rotated out).
	ErrSealed = errors.New("requestState does not open: it was altered, or sealed with a key this gateway does not hold")
	// ErrExpired: the token's time ran out.
	ErrExpired = errors.New("requestState has expired: make the request again without it")
	// ErrOtherCaller: the token was issued to another subject.
	ErrOtherCaller = errors.New("requestState was issued to another caller")
	// ErrOtherRequest: the token was issued for another server, method,
	// tool, prompt or resource, or other arguments.
	ErrOtherRequest = errors.New("requestState was issued for another request (another tool, prompt, resource or arguments)")
)

// Binding is what a sealed state belongs to. The retry that carries it must
// present the same.
type Binding struct {
	// Server is the upstream server that issued the input requests.
	Server string
	// Subject is the caller's subject (its token's, or the local one).
	Subject string
	// Method is "tools/call", "prompts/get" or "resources/read".
	Method string
	// Name is the tool or prompt as the caller named it, or the URI.
	Name string
	// Args is the Digest of the request's arguments.
	Args [32]byte
}

// Options configure a Sealer. A nil *Options means defaults.
type Options struct {
	// TTL is how long a state opens after it was sealed. Zero means
	// DefaultTTL.
	TTL time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// A Sealer seals and opens request states. Safe for concurrent use.
type Sealer struct {
	keys *vault.Keys
	ttl  time.Duration
	now  func() time.Time
}

// New returns a Sealer with keys (derive them for Purpose).
func New(keys *vault.Keys, opts *Options) *Sealer {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Sealer{keys: keys, ttl: o.TTL, now: o.Now}
}

// payload is what a token seals.
type payload struct {
	V       int    `json:"v"`
	Server  string `json:"srv"`
	State   string `json:"st"`
	Subject string `json:"sub"`
	Method  string `json:"m"`
	Name    string `json:"n"`
	Args    string `json:"a"`   // hex of Binding.Args
	Expires int64  `json:"exp"` // Unix seconds
}

// Seal returns the token that stands for the upstream's state in the
// answer to the caller bound by b.
func (s *Sealer) Seal(b Binding, state string) (string, error) {
	pt, err := json.Marshal(payload{V: 1, Server: b.Server, State: state, Subject: b.Subject, Method: b.Method, Name: b.Name,
		Args: hex.EncodeToString(b.Args[:]), Expires: s.now().Add(s.ttl).Unix()})
	if err != nil {
		return "", fmt.Errorf("inputstate: %w", err)
	}
	id, blob, err := s.keys.Seal(aad, pt)
	if err != nil {
		return "", fmt.Errorf("inputstate: %w", err)
	}
	rawID, err := hex.DecodeString(id)
	if err != nil || len(rawID) != keyIDLen {
		return "", fmt.Errorf("inputstate: key ID %q is not %d bytes of hex", id, keyIDLen)
	}
	tok := append(rawID, blob...)
	if n := len(prefix) + base64.RawURLEncoding.EncodedLen(len(tok)); n > MaxToken {
		return "", fmt.Errorf("inputstate: the upstream's requestState is too long to seal (%d bytes sealed, at most %d)", n, MaxToken)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(tok), nil
}

// Open returns the upstream's state sealed in token, when token opens, has
// not expired and was sealed for b. Its errors wrap one of ErrMalformed,
// ErrSealed, ErrExpired, ErrOtherCaller and ErrOtherRequest.
func (s *Sealer) Open(token string, b Binding) (string, error) {
	p, err := s.parse(token)
	if err != nil {
		return "", err
	}
	switch {
	case p.Subject != b.Subject:
		return "", ErrOtherCaller
	case p.Server != b.Server || p.Method != b.Method || p.Name != b.Name || p.Args != hex.EncodeToString(b.Args[:]):
		return "", ErrOtherRequest
	case s.now().Unix() >= p.Expires:
		return "", ErrExpired
	}
	return p.State, nil
}

// parse opens a token and reads what it seals.
func (s *Sealer) parse(token string) (*payload, error) {
	if len(token) > MaxToken {
		return nil, fmt.Errorf("%w (longer than %d bytes)", ErrMalformed, MaxToken)
	}
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return nil, ErrMalformed
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w (not base64url)", ErrMalformed)
	}
	if len(raw) <= keyIDLen {
		return nil, fmt.Errorf("%w (too short)", ErrMalformed)
	}
	pt, err := s.keys.Open(aad, hex.EncodeToString(raw[:keyIDLen]), raw[keyIDLen:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSealed, err)
	}
	return decode(pt)
}

// decode reads a payload: one JSON object of exactly its fields, version
// 1, with a server, subject, method, name, digest and expiry.
func decode(pt []byte) (*payload, error) {
	var p payload
	d := json.NewDecoder(bytes.NewReader(pt))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w (what it seals does not read: %w)", ErrMalformed, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w (trailing data)", ErrMalformed)
	}
	switch {
	case p.V != 1:
		return nil, fmt.Errorf("%w (version %d)", ErrMalformed, p.V)
	case p.Server == "" || p.Method == "" || p.Name == "":
		return nil, fmt.Errorf("%w (no server, method or name)", ErrMalformed)
	case len(p.Args) != 2*sha256.Size:
		return nil, fmt.Errorf("%w (no digest of the arguments)", ErrMalformed)
	case p.Expires <= 0:
		return nil, fmt.Errorf("%w (no expiry)", ErrMalformed)
	}
	return &p, nil
}

// Digest is the digest of a request's arguments (a JSON value's bytes; nil
// for none) that a Binding holds: of their canonical form (objects' keys
// sorted, no insignificant space, numbers as written), so that one value
// sent twice digests alike however it was spaced. Bytes that are not JSON
// digest as they are.
func Digest(args []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("gatehouse/inputstate/args/v1\x00"))
	if t := bytes.TrimSpace(args); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		var v any
		d := json.NewDecoder(bytes.NewReader(t))
		d.UseNumber()
		if d.Decode(&v) == nil && !d.More() {
			if c, err := json.Marshal(v); err == nil {
				t = c
			}
		}
		h.Write(t)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
