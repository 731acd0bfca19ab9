package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxPool is the largest -keys pool:N.
const maxPool = 100000

// maxPoolBytes bounds the arguments precomputed for a key pool (one encoding
// per key): pool × payload.
const maxPoolBytes = 256 << 20

// errKeysSyntax is wrapped by every -keys error about the value's shape.
var errKeysSyntax = errors.New(`want "unique" or "pool:N"`)

// keySpec is a parsed -keys value: which _meta.idempotencyKey each call
// carries. The zero value sends none.
type keySpec struct {
	on   bool
	pool int // 0: a fresh key per call; N: keys drawn from N per loop
}

// String is the flag's value as given: "", "unique" or "pool:N".
func (k keySpec) String() string {
	switch {
	case !k.on:
		return ""
	case k.pool == 0:
		return "unique"
	default:
		return "pool:" + strconv.Itoa(k.pool)
	}
}

// parseKeys parses a -keys value: "unique" (a fresh key per call) or
// "pool:N" (N keys per loop, taken in turn, 1 ≤ N ≤ maxPool). N is decimal
// digits only: no sign, no spaces, no leading zeros.
func parseKeys(s string) (keySpec, error) {
	if s == "unique" {
		return keySpec{on: true}, nil
	}
	n, ok := strings.CutPrefix(s, "pool:")
	if !ok {
		return keySpec{}, fmt.Errorf("-keys %q: %w", s, errKeysSyntax)
	}
	if n == "" {
		return keySpec{}, fmt.Errorf("-keys %q: no pool size after \"pool:\"", s)
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return keySpec{}, fmt.Errorf("-keys %q: pool size %q is not a decimal number", s, n)
		}
	}
	if n[0] == '0' {
		return keySpec{}, fmt.Errorf("-keys %q: pool size must be at least 1, without leading zeros", s)
	}
	v, err := strconv.Atoi(n)
	if err != nil || v > maxPool {
		return keySpec{}, fmt.Errorf("-keys %q: pool size must be at most %d", s, maxPool)
	}
	return keySpec{on: true, pool: v}, nil
}

// newRunID returns 16 random hex digits naming this run in its keys, so that
// two runs against one gateway never share a key (the journal keeps keys for
// a day).
func newRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// poolArgs returns the arguments of each key of a pool: with a generated
// payload, key i's payload begins with "k<i>-" (as much of it as fits), so
// the answer to a replay is checked against its own key's call, never
// another's; without one every key has the arguments of the command line.
// expects[i] is what -verify wants for key i.
func poolArgs(cfg *config, n int) (args []json.RawMessage, expects []string, err error) {
	if cfg.PayloadBytes > 0 && int64(n)*int64(cfg.PayloadBytes+64) > maxPoolBytes {
		return nil, nil, fmt.Errorf("-keys pool:%d with -payload %d: more than %d MiB of arguments to keep", n, cfg.PayloadBytes, maxPoolBytes>>20)
	}
	args = make([]json.RawMessage, n)
	expects = make([]string, n)
	if cfg.PayloadBytes == 0 {
		for i := range args {
			args[i], expects[i] = cfg.Args, cfg.Expect
		}
		return args, expects, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(cfg.Args, &obj); err != nil {
		return nil, nil, fmt.Errorf("arguments: %w", err)
	}
	base := []byte(makePayload(cfg.PayloadBytes))
	for i := range args {
		p := append([]byte(nil), base...)
		copy(p, "k"+strconv.Itoa(i)+"-")
		s := string(p)
		v, _ := json.Marshal(s)
		obj[cfg.Field] = v
		if args[i], err = json.Marshal(obj); err != nil {
			return nil, nil, err
		}
		if cfg.Verify {
			expects[i] = s
		}
	}
	return args, expects, nil
}

// keyer hands one loop its keys and arguments, call after call. Only the
// loop's goroutine uses it.
type keyer struct {
	spec    keySpec
	prefix  string // "mcpload-<run>-<loop>-"
	n       int64  // calls made so far by this loop
	args    []json.RawMessage
	expects []string
}

// next returns the key, arguments and expected answer of the loop's next
// call, and whether the key was sent before (a replay at a journaling
// gateway).
func (k *keyer) next(cfg *config) (key string, args json.RawMessage, expect string, repeat bool) {
	i := k.n
	k.n++
	if k.spec.pool == 0 {
		return k.prefix + strconv.FormatInt(i, 10), cfg.Args, cfg.Expect, false
	}
	p := int(i % int64(k.spec.pool))
	return k.prefix + "p" + strconv.Itoa(p), k.args[p], k.expects[p], i >= int64(k.spec.pool)
}
