package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// KeyHash returns the SHA-256 of parts, each written as its length (8
// bytes, big-endian) followed by its bytes. The framing makes it injective
// over lists of parts: no choice of parts (a NUL byte, a separator, an
// empty part, a megabyte) hashes as another list does, so parts chosen by
// a caller can never name another caller's key.
//
// KeyHash is the one way the module derives a stored key (a counter's
// name, a journal record's run or tool call ID) from values a caller
// chooses; [Key] is its short printable form. The first part should name
// the derivation and its version ("gatehouse/run/v1"), so that two uses
// never share a key.
func KeyHash(parts ...string) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// Key returns prefix, "_" and 32 lowercase hex digits (the first 16 bytes
// of [KeyHash] of prefix followed by parts): a short key in plain ASCII
// that every store accepts (PostgreSQL refuses a NUL byte or invalid UTF-8
// in text, and indexes refuse rows of a few KiB) whatever the parts hold.
// prefix is the caller's constant (e.g. "fw"), never caller-chosen data;
// it is hashed too, so two prefixes never share a key.
func Key(prefix string, parts ...string) string {
	all := make([]string, 0, 1+len(parts))
	all = append(all, prefix)
	all = append(all, parts...)
	sum := KeyHash(all...)
	return prefix + "_" + hex.EncodeToString(sum[:16])
}
