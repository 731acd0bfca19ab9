package vault_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/vault"
)

var key32 = bytes.Repeat([]byte{0xA5}, vault.KeySize)

func TestParseKeyAccepts(t *testing.T) {
	for name, s := range map[string]string{
		"hex":           hex.EncodeToString(key32),
		"HEX":           strings.ToUpper(hex.EncodeToString(key32)),
		"base64":        base64.StdEncoding.EncodeToString(key32),
		"base64 raw":    base64.RawStdEncoding.EncodeToString(key32),
		"base64url":     base64.URLEncoding.EncodeToString(key32),
		"base64url raw": base64.RawURLEncoding.EncodeToString(key32),
		"white space":   "  " + base64.StdEncoding.EncodeToString(key32) + "\n",
	} {
		k, err := vault.ParseKey(s)
		if err != nil || !bytes.Equal(k, key32) {
			t.Errorf("%s: %x, %v", name, k, err)
		}
	}
}

// TestParseKeyRefuses: one case per way a key can be wrong, each a
// KeyError wrapping ErrBadKey that says what is wrong and does not quote
// the input.
func TestParseKeyRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "empty"},
		{"blank", " \t\n", "empty"},
		{"short base64", base64.StdEncoding.EncodeToString(key32[:16]), "16 bytes, want 32"},
		{"long base64", base64.StdEncoding.EncodeToString(append(key32, key32...)), "64 bytes, want 32"},
		{"short hex", hex.EncodeToString(key32[:31]), "62 hex digits, want 64"},
		{"hex with a non-hex digit", strings.Repeat("a", 63) + "g", "decodes to 48 bytes"},
		{"neither", "not a key! " + strings.Repeat("z", 30), "neither base64 nor hex"},
		{"bad padding", base64.StdEncoding.EncodeToString(key32)[:43] + "==", "neither base64 nor hex"},
		{"inner space", base64.StdEncoding.EncodeToString(key32)[:20] + " " + base64.StdEncoding.EncodeToString(key32)[20:], "neither base64 nor hex"},
	} {
		_, err := vault.ParseKey(tc.in)
		var ke *vault.KeyError
		if !errors.Is(err, vault.ErrBadKey) || !errors.As(err, &ke) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a KeyError saying %q", tc.name, err, tc.want)
			continue
		}
		if in := strings.TrimSpace(tc.in); len(in) >= 8 && strings.Contains(err.Error(), in) {
			t.Errorf("%s: the error quotes the input: %v", tc.name, err)
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadKeysEnv(t *testing.T) {
	cur, prev := newKey(t), newKey(t)
	ks, err := vault.LoadKeys(&vault.KeyOptions{Getenv: env(map[string]string{
		vault.EnvKey: base64.StdEncoding.EncodeToString(cur), vault.EnvPreviousKey: hex.EncodeToString(prev)})})
	if err != nil || ks.CurrentID() != vault.KeyID(cur) || ks.PreviousID() != vault.KeyID(prev) {
		t.Fatalf("LoadKeys = %+v, %v", ks, err)
	}
	ks, err = vault.LoadKeys(&vault.KeyOptions{Getenv: env(map[string]string{vault.EnvKey: hex.EncodeToString(cur)})})
	if err != nil || ks.PreviousID() != "" {
		t.Fatalf("LoadKeys without a previous key = %+v, %v", ks, err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", nil, vault.EnvKey + ": not set"},
		{"bad current", map[string]string{vault.EnvKey: "short"}, vault.EnvKey + ": neither base64 nor hex"},
		{"bad previous", map[string]string{vault.EnvKey: hex.EncodeToString(cur), vault.EnvPreviousKey: hex.EncodeToString(cur[:8])},
			vault.EnvPreviousKey + ": 16 hex digits"},
		{"previous is current", map[string]string{vault.EnvKey: hex.EncodeToString(cur), vault.EnvPreviousKey: base64.StdEncoding.EncodeToString(cur)},
			vault.EnvPreviousKey + ": is the current key"},
	} {
		_, err := vault.LoadKeys(&vault.KeyOptions{Getenv: env(tc.env)})
		if !errors.Is(err, vault.ErrBadKey) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}

func writeKeyFile(t *testing.T, content string, mode fs.FileMode) string {
	p := filepath.Join(t.TempDir(), "vault.key")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadKeysFile(t *testing.T) {
	cur, prev := newKey(t), newKey(t)
	p := writeKeyFile(t, "# the vault's keys\n"+base64.StdEncoding.EncodeToString(cur)+"\n\n"+hex.EncodeToString(prev)+"\n", 0o600)
	// The file wins over the environment.
	ks, err := vault.LoadKeys(&vault.KeyOptions{File: p, Getenv: env(map[string]string{vault.EnvKey: "ignored"})})
	if err != nil || ks.CurrentID() != vault.KeyID(cur) || ks.PreviousID() != vault.KeyID(prev) {
		t.Fatalf("LoadKeys(file) = %+v, %v", ks, err)
	}
	b64 := base64.StdEncoding.EncodeToString(cur)
	cases := []struct {
		name, content string
		mode          fs.FileMode
		want          string
	}{
		{"empty", "", 0o600, "holds no key"},
		{"comments only", "# nothing\n\n", 0o600, "holds no key"},
		{"three keys", b64 + "\n" + hex.EncodeToString(prev) + "\n" + b64 + "\n", 0o600, "line 3: a key file holds at most two keys"},
		{"bad first line", "xyz\n", 0o600, "line 1: neither base64 nor hex"},
		{"bad second line", b64 + "\n" + hex.EncodeToString(prev[:4]) + "\n", 0o600, "line 2: 8 hex digits"},
		{"same key twice", b64 + "\n" + hex.EncodeToString(cur) + "\n", 0o600, "is the current key"},
	}
	if runtime.GOOS != "windows" {
		cases = append(cases,
			struct {
				name, content string
				mode          fs.FileMode
				want          string
			}{"group readable", b64, 0o640, "mode 0640 lets group or others at it"},
			struct {
				name, content string
				mode          fs.FileMode
				want          string
			}{"world readable", b64, 0o644, "mode 0644"})
	}
	for _, tc := range cases {
		_, err := vault.LoadKeys(&vault.KeyOptions{File: writeKeyFile(t, tc.content, tc.mode)})
		if !errors.Is(err, vault.ErrBadKey) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), b64) {
			t.Errorf("%s: the error quotes the key", tc.name)
		}
	}
	missing := filepath.Join(t.TempDir(), "absent.key")
	if _, err := vault.LoadKeys(&vault.KeyOptions{File: missing}); !errors.Is(err, vault.ErrBadKey) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v; want ErrBadKey and fs.ErrNotExist", err)
	}
	if _, err := vault.LoadKeys(&vault.KeyOptions{File: t.TempDir()}); !errors.Is(err, vault.ErrBadKey) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	if runtime.GOOS != "windows" && os.Getuid() != 0 {
		p := writeKeyFile(t, b64, 0o600)
		if err := os.Chmod(p, 0o000); err != nil {
			t.Fatal(err)
		}
		if _, err := vault.LoadKeys(&vault.KeyOptions{File: p}); !errors.Is(err, vault.ErrBadKey) || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("unreadable file: %v; want ErrBadKey and fs.ErrPermission", err)
		}
	}
}

func TestNewKeys(t *testing.T) {
	if _, err := vault.NewKeys(key32[:31], nil); !errors.Is(err, vault.ErrBadKey) {
		t.Errorf("31-byte key: %v", err)
	}
	if _, err := vault.NewKeys(key32, key32[:5]); !errors.Is(err, vault.ErrBadKey) {
		t.Errorf("5-byte previous key: %v", err)
	}
	if _, err := vault.NewKeys(key32, key32); !errors.Is(err, vault.ErrBadKey) {
		t.Errorf("previous equal to current: %v", err)
	}
}

// FuzzParseKey: whatever the input, ParseKey returns 32 bytes that are the
// hex or base64 decoding of the trimmed input, or a KeyError that does not
// quote it; it never panics.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"", " ", hex.EncodeToString(key32), base64.StdEncoding.EncodeToString(key32),
		base64.RawURLEncoding.EncodeToString(key32), "zz", strings.Repeat("0", 63), strings.Repeat("=", 44)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := vault.ParseKey(s)
		in := strings.TrimSpace(s)
		if err != nil {
			var ke *vault.KeyError
			if k != nil || !errors.As(err, &ke) || !errors.Is(err, vault.ErrBadKey) {
				t.Fatalf("ParseKey(%q) = %x, %v: not a KeyError", s, k, err)
			}
			if len(in) >= 8 && strings.Contains(err.Error(), in) {
				t.Fatalf("ParseKey(%q): the error quotes the input: %v", s, err)
			}
			return
		}
		if len(k) != vault.KeySize {
			t.Fatalf("ParseKey(%q) = %d bytes", s, len(k))
		}
		var decodings [][]byte
		if h, err := hex.DecodeString(in); err == nil {
			decodings = append(decodings, h)
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if b, err := enc.Strict().DecodeString(in); err == nil {
				decodings = append(decodings, b)
			}
		}
		for _, d := range decodings {
			if bytes.Equal(d, k) {
				return
			}
		}
		t.Fatalf("ParseKey(%q) = %x, which is no decoding of the input", s, k)
	})
}

// FuzzParseKeyFile: a key file parses to the keys of its first and second
// non-comment lines, or to a KeyError that quotes no line of it.
func FuzzParseKeyFile(f *testing.F) {
	a, b := hex.EncodeToString(key32), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, vault.KeySize))
	for _, s := range []string{"", a, a + "\n" + b + "\n", "# c\n\n" + a + "\n", a + "\n" + a, a + "\n" + b + "\n" + a, "x\n" + a} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := vault.ParseKeyFile("k", data)
		var lines []string
		for l := range strings.SplitSeq(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		if err != nil {
			if ks != nil || !errors.Is(err, vault.ErrBadKey) {
				t.Fatalf("ParseKeyFile = %v, %v: not a KeyError", ks, err)
			}
			for _, l := range lines {
				if len(l) >= 8 && strings.Contains(err.Error(), l) {
					t.Fatalf("the error quotes a line: %v", err)
				}
			}
			return
		}
		if len(lines) == 0 || len(lines) > 2 {
			t.Fatalf("ParseKeyFile accepted %d keys", len(lines))
		}
		cur, err := vault.ParseKey(lines[0])
		if err != nil || ks.CurrentID() != vault.KeyID(cur) {
			t.Fatalf("current key %s is not line 1's (%v)", ks.CurrentID(), err)
		}
		if len(lines) == 2 {
			prev, err := vault.ParseKey(lines[1])
			if err != nil || ks.PreviousID() != vault.KeyID(prev) {
				t.Fatalf("previous key %s is not line 2's (%v)", ks.PreviousID(), err)
			}
		} else if ks.PreviousID() != "" {
			t.Fatal("a previous key from a one-key file")
		}
	})
}

// TestDerive: keys derived for a purpose seal what neither the keys they
// come from nor keys of another purpose open; the previous key is derived
// too, so a rotation carries over.
func TestDerive(t *testing.T) {
	cur, prev := bytes.Repeat([]byte{7}, vault.KeySize), bytes.Repeat([]byte{8}, vault.KeySize)
	ks, err := vault.NewKeys(cur, prev)
	if err != nil {
		t.Fatal(err)
	}
	a, b := ks.Derive("a"), ks.Derive("b")
	if a.CurrentID() == ks.CurrentID() || a.CurrentID() == b.CurrentID() || a.PreviousID() == "" || a.PreviousID() == ks.PreviousID() {
		t.Fatalf("derived IDs: %s %s %s %s", ks.CurrentID(), a.CurrentID(), b.CurrentID(), a.PreviousID())
	}
	if again := ks.Derive("a"); again.CurrentID() != a.CurrentID() {
		t.Fatal("one purpose derives two keys")
	}
	id, blob, err := a.Seal("x", []byte("pt"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := a.Open("x", id, blob); err != nil || string(pt) != "pt" {
		t.Fatalf("open: %q %v", pt, err)
	}
	for name, k := range map[string]*vault.Keys{"the keys it comes from": ks, "another purpose": b} {
		if _, err := k.Open("x", id, blob); !errors.Is(err, vault.ErrSealed) {
			t.Errorf("%s opened it: %v", name, err)
		}
	}
	// Sealed under the derived previous key: opens once rotated.
	old, _ := vault.NewKeys(prev, nil)
	id, blob, _ = old.Derive("a").Seal("x", []byte("old"))
	if pt, err := a.Open("x", id, blob); err != nil || string(pt) != "old" {
		t.Fatalf("the derived previous key: %q %v", pt, err)
	}
}
