package vault

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// The environment variables LoadKeys reads.
const (
	// EnvKey holds the current key: 32 bytes, base64 (standard or URL,
	// padded or not) or hex.
	EnvKey = "GATEHOUSE_SECRET_KEY"
	// EnvPreviousKey holds the key before it, during a rotation.
	EnvPreviousKey = "GATEHOUSE_SECRET_KEY_PREVIOUS"
)

// KeySize is the size of a vault key in bytes (AES-256).
const KeySize = 32

// ErrBadKey is wrapped by every [KeyError]: a key that is missing, not
// 32 bytes, not base64 or hex, or a key file that cannot be used.
var ErrBadKey = errors.New("vault: bad secret key")

// KeyError says why a key could not be loaded. It never holds key
// material. It wraps ErrBadKey (and the file's error, if any).
type KeyError struct {
	// Source names where the key came from: an environment variable or
	// "key file PATH line N".
	Source string
	// Reason says what is wrong, in words.
	Reason string
	// Err is the underlying error (reading the file), if any.
	Err error
}

func (e *KeyError) Error() string {
	s := fmt.Sprintf("vault: %s: %s", e.Source, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrBadKey and the underlying error.
func (e *KeyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadKey, e.Err}
	}
	return []error{ErrBadKey}
}

// ParseKey decodes one key: 64 hex digits, or base64 (standard or URL
// alphabet, padded or not) of exactly 32 bytes; surrounding white space is
// ignored. The error (a [KeyError] with Source "key") never quotes the
// input.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	bad := func(reason string) error { return &KeyError{Source: "key", Reason: reason} }
	if s == "" {
		return nil, bad("empty")
	}
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	decoded := -1 // the length of a base64 decoding, if any
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		k, err := enc.Strict().DecodeString(s)
		if err != nil {
			continue
		}
		if len(k) == KeySize {
			return k, nil
		}
		decoded = len(k)
	}
	switch {
	case isHex(s): // hex digits are base64 too: say it as hex
		return nil, bad(fmt.Sprintf("%d hex digits, want %d", len(s), 2*KeySize))
	case decoded >= 0:
		return nil, bad(fmt.Sprintf("decodes to %d bytes, want %d (generate one with: openssl rand -base64 32)", decoded, KeySize))
	}
	return nil, bad(fmt.Sprintf("neither base64 nor hex (%d characters; generate one with: openssl rand -base64 32)", len(s)))
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// KeyOptions say where LoadKeys finds the keys.
type KeyOptions struct {
	// File, when set, is a key file: the current key on its first line,
	// the previous one (during a rotation) on an optional second line;
	// blank lines and lines starting with # are skipped. On Unix it must
	// not be readable or writable by group or others. When File is set
	// the environment is not read.
	File string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// Keys are the vault's keys: the current one, which seals, and an
// optional previous one, which only opens (a rotation in progress).
type Keys struct {
	current, previous *key
}

type key struct {
	id   string
	aead cipher.AEAD
	raw  []byte // for Derive
}

// LoadKeys loads the keys from opts.File, else from the environment
// variables GATEHOUSE_SECRET_KEY and GATEHOUSE_SECRET_KEY_PREVIOUS. A
// missing, malformed or misplaced key is a [KeyError].
func LoadKeys(opts *KeyOptions) (*Keys, error) {
	var o KeyOptions
	if opts != nil {
		o = *opts
	}
	if o.File != "" {
		return loadFile(o.File)
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cur := getenv(EnvKey)
	if strings.TrimSpace(cur) == "" {
		return nil, &KeyError{Source: EnvKey, Reason: "not set (set it, or configure a key file)"}
	}
	k, err := parseAt(EnvKey, cur)
	if err != nil {
		return nil, err
	}
	var prev []byte
	if p := getenv(EnvPreviousKey); strings.TrimSpace(p) != "" {
		if prev, err = parseAt(EnvPreviousKey, p); err != nil {
			return nil, err
		}
	}
	return newKeys(k, prev, EnvPreviousKey)
}

func parseAt(source, s string) ([]byte, error) {
	k, err := ParseKey(s)
	if err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			ke.Source = source
		}
		return nil, err
	}
	return k, nil
}

// ParseKeyFile parses the content of a key file (see KeyOptions.File);
// name is used in errors.
func ParseKeyFile(name string, data []byte) (*Keys, error) {
	var lines []string
	var nums []int
	for i, l := range bytes.Split(data, []byte("\n")) {
		t := strings.TrimSpace(string(l))
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		lines, nums = append(lines, t), append(nums, i+1)
	}
	src := func(i int) string { return fmt.Sprintf("key file %s line %d", name, nums[i]) }
	switch {
	case len(lines) == 0:
		return nil, &KeyError{Source: "key file " + name, Reason: "holds no key"}
	case len(lines) > 2:
		return nil, &KeyError{Source: src(2), Reason: "a key file holds at most two keys (current, then previous)"}
	}
	k, err := parseAt(src(0), lines[0])
	if err != nil {
		return nil, err
	}
	var prev []byte
	if len(lines) == 2 {
		if prev, err = parseAt(src(1), lines[1]); err != nil {
			return nil, err
		}
	}
	return newKeys(k, prev, "key file "+name)
}

func loadFile(name string) (*Keys, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, &KeyError{Source: "key file " + name, Reason: "cannot be read", Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &KeyError{Source: "key file " + name, Reason: "is not a regular file"}
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, &KeyError{Source: "key file " + name,
			Reason: fmt.Sprintf("mode %04o lets group or others at it; chmod 600 it", fi.Mode().Perm())}
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, &KeyError{Source: "key file " + name, Reason: "cannot be read", Err: err}
	}
	return ParseKeyFile(name, data)
}

// NewKeys returns Keys from raw 32-byte keys; previous may be nil.
func NewKeys(current, previous []byte) (*Keys, error) {
	if len(current) != KeySize {
		return nil, &KeyError{Source: "current key", Reason: fmt.Sprintf("%d bytes, want %d", len(current), KeySize)}
	}
	if previous != nil && len(previous) != KeySize {
		return nil, &KeyError{Source: "previous key", Reason: fmt.Sprintf("%d bytes, want %d", len(previous), KeySize)}
	}
	return newKeys(current, previous, "previous key")
}

func newKeys(current, previous []byte, prevSource string) (*Keys, error) {
	ks := &Keys{current: mustKey(current)}
	if previous != nil {
		if bytes.Equal(previous, current) {
			return nil, &KeyError{Source: prevSource, Reason: "is the current key (drop it once rekeyed)"}
		}
		ks.previous = mustKey(previous)
	}
	return ks, nil
}

func mustKey(k []byte) *key {
	block, err := aes.NewCipher(k)
	if err != nil {
		panic(err) // unreachable: k is 32 bytes
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // unreachable: a standard nonce size
	}
	return &key{id: KeyID(k), aead: aead, raw: k}
}

// Derive returns keys of their own for one purpose: each of ks's keys
// (current and previous) turned by HKDF-SHA256 with purpose as its info
// into another 32-byte key. What they seal does not open with ks, nor with
// the keys of another purpose, and neither reveals the other. A rotation
// of ks rotates them alike.
func (ks *Keys) Derive(purpose string) *Keys {
	d := func(k *key) *key {
		if k == nil {
			return nil
		}
		sub, err := hkdf.Key(sha256.New, k.raw, nil, "gatehouse/vault/derive/v1\x00"+purpose, KeySize)
		if err != nil {
			panic(err) // unreachable: 32 bytes of SHA-256 HKDF
		}
		return mustKey(sub)
	}
	return &Keys{current: d(ks.current), previous: d(ks.previous)}
}

// KeyID names a key: the first 8 bytes (hex) of a domain-separated
// SHA-256 of it. Stored beside each sealed row; it identifies the key
// without revealing it.
func KeyID(k []byte) string {
	h := sha256.Sum256(append([]byte("gatehouse vault key id\x00"), k...))
	return hex.EncodeToString(h[:8])
}

// CurrentID is the ID of the key that seals.
func (ks *Keys) CurrentID() string { return ks.current.id }

// PreviousID is the ID of the previous key, or "" when there is none.
func (ks *Keys) PreviousID() string {
	if ks.previous == nil {
		return ""
	}
	return ks.previous.id
}

func (ks *Keys) byID(id string) *key {
	switch {
	case id == ks.current.id:
		return ks.current
	case ks.previous != nil && id == ks.previous.id:
		return ks.previous
	}
	return nil
}
