package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// ErrKey is wrapped by every error about a key's text.
var ErrKey = errors.New("audit: bad key")

// ParsePrivateKey reads an Ed25519 private key: a PEM "PRIVATE KEY" block
// (PKCS #8, as `openssl genpkey -algorithm ed25519` writes it) or the
// standard base64 of its 32-byte seed.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	text := bytes.TrimSpace(data)
	if len(text) == 0 {
		return nil, fmt.Errorf("%w: the private key is empty", ErrKey)
	}
	if block, rest := pem.Decode(text); block != nil {
		if len(bytes.TrimSpace(rest)) != 0 {
			return nil, fmt.Errorf("%w: text after the private key's PEM block", ErrKey)
		}
		if block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("%w: a PEM %q block, want \"PRIVATE KEY\" (PKCS #8 Ed25519)", ErrKey, block.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrKey, err)
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%w: a %T, want an Ed25519 key", ErrKey, k)
		}
		return ek, nil
	}
	seed, err := base64.StdEncoding.DecodeString(string(text))
	if err != nil {
		return nil, fmt.Errorf("%w: neither a PEM block nor base64: %w", ErrKey, err)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%w: a base64 seed of %d bytes, want %d", ErrKey, len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// ParsePublicKey reads an Ed25519 public key: a PEM "PUBLIC KEY" block
// (PKIX) or the standard base64 of its 32 bytes.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	text := bytes.TrimSpace(data)
	if len(text) == 0 {
		return nil, fmt.Errorf("%w: the public key is empty", ErrKey)
	}
	if block, rest := pem.Decode(text); block != nil {
		if len(bytes.TrimSpace(rest)) != 0 {
			return nil, fmt.Errorf("%w: text after the public key's PEM block", ErrKey)
		}
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%w: a PEM %q block, want \"PUBLIC KEY\"", ErrKey, block.Type)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrKey, err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%w: a %T, want an Ed25519 key", ErrKey, k)
		}
		return ek, nil
	}
	raw, err := base64.StdEncoding.DecodeString(string(text))
	if err != nil {
		return nil, fmt.Errorf("%w: neither a PEM block nor base64: %w", ErrKey, err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: a base64 key of %d bytes, want %d", ErrKey, len(raw), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// MarshalPrivateKey returns k as a PEM "PRIVATE KEY" block (PKCS #8).
func MarshalPrivateKey(k ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// MarshalPublicKey returns k as a PEM "PUBLIC KEY" block (PKIX).
func MarshalPublicKey(k ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// KeyID names a public key in checkpoints: the first 16 hex digits of its
// SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}
