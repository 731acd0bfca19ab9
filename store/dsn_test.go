package store_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/store"
)

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want store.DSN
	}{
		{"sqlite:gatehouse.db", store.DSN{Kind: store.KindSQLite, Path: "gatehouse.db"}},
		{"sqlite:./data/g.db", store.DSN{Kind: store.KindSQLite, Path: "./data/g.db"}},
		{"sqlite:/var/lib/gatehouse/g.db", store.DSN{Kind: store.KindSQLite, Path: "/var/lib/gatehouse/g.db"}},
		{"SQLite:g.db", store.DSN{Kind: store.KindSQLite, Path: "g.db"}},
		{"sqlite:dir with spaces/g.db", store.DSN{Kind: store.KindSQLite, Path: "dir with spaces/g.db"}},
		{"sqlite:g.db?durability=power", store.DSN{Kind: store.KindSQLite, Path: "g.db", Durability: store.DurabilityPower}},
		{"sqlite:g.db?durability=process", store.DSN{Kind: store.KindSQLite, Path: "g.db", Durability: store.DurabilityProcess}},
		{"memory:", store.DSN{Kind: store.KindMemory}},
		{"postgres://u:p@db.example:5432/gh?sslmode=require", store.DSN{Kind: store.KindPostgres, URL: "postgres://u:p@db.example:5432/gh?sslmode=require"}},
		{"postgresql://db.example/gh", store.DSN{Kind: store.KindPostgres, URL: "postgresql://db.example/gh"}},
		{"postgres://db.example/gh?durability=power&sslmode=disable", store.DSN{Kind: store.KindPostgres, URL: "postgres://db.example/gh?sslmode=disable", Durability: store.DurabilityPower}},
	} {
		got, err := store.ParseDSN(tc.in)
		if err != nil {
			t.Errorf("ParseDSN(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseDSN(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseDSNErrors(t *testing.T) {
	for _, tc := range []struct {
		in       string
		specific error // besides ErrInvalidDSN; nil for none
		mention  string
	}{
		{"", store.ErrEmptyDSN, "required"},
		{"   ", store.ErrEmptyDSN, "required"},
		{" sqlite:x.db", nil, "spaces"},
		{"gatehouse.db", store.ErrUnknownScheme, "no scheme"},
		{":x", store.ErrUnknownScheme, "no scheme"},
		{"mysql://db/x", store.ErrUnknownScheme, `"mysql"`},
		{"redis:x", store.ErrUnknownScheme, `"redis"`},
		{"sqlite:", store.ErrMissingPath, "sqlite:PATH"},
		{"sqlite:?durability=power", store.ErrMissingPath, "sqlite:PATH"},
		{"sqlite:   ", nil, "spaces"},
		{"sqlite: ?", nil, "spaces"},
		{"sqlite: x.db?durability=power", nil, "spaces"},
		{"sqlite://x.db", nil, "ambiguous"},
		{"sqlite:///abs/x.db", nil, "ambiguous"},
		{"sqlite::memory:", nil, "memory:"},
		{"sqlite:file:x.db", nil, "URIs"},
		{"sqlite:x\x00.db", nil, "NUL"},
		{"sqlite:x.db?durability=forever", nil, `"forever"`},
		{"sqlite:x.db?durability=power&durability=process", nil, "2 times"},
		{"sqlite:x.db?cache=shared", nil, `"cache"`},
		{"sqlite:what?.db", nil, `unknown sqlite parameter ".db"`},
		{"sqlite:x.db?%zz", nil, "parameters"},
		{"memory:x", nil, "no path"},
		{"postgres:db.example/gh", nil, "postgres://"},
		{"postgres://u:secret@db.example/gh?durability=never", nil, `"never"`},
		{"postgres://u:secret@db.example:badport/gh", nil, "does not parse"},
		{"postgres://db/gh?durability=power&durability=power", nil, "2 times"},
	} {
		_, err := store.ParseDSN(tc.in)
		if err == nil {
			t.Errorf("ParseDSN(%q) succeeded", tc.in)
			continue
		}
		if !errors.Is(err, store.ErrInvalidDSN) {
			t.Errorf("ParseDSN(%q) = %v, not ErrInvalidDSN", tc.in, err)
		}
		if tc.specific != nil && !errors.Is(err, tc.specific) {
			t.Errorf("ParseDSN(%q) = %v, want %v", tc.in, err, tc.specific)
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ParseDSN(%q) = %q, want it to mention %q", tc.in, err, tc.mention)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseDSN(%q) error repeats the password: %v", tc.in, err)
		}
		if n := strings.Count(err.Error(), "store:"); n != 1 {
			t.Errorf("ParseDSN(%q) = %q: the package prefix %d times, want once", tc.in, err, n)
		}
	}
}

func TestDSNFromEnv(t *testing.T) {
	t.Setenv("GATEHOUSE_STORE", "")
	if got := store.DSNFromEnv("sqlite:a.db"); got != "sqlite:a.db" {
		t.Fatalf("unset env: %q", got)
	}
	t.Setenv("GATEHOUSE_STORE", "memory:")
	if got := store.DSNFromEnv("sqlite:a.db"); got != "memory:" {
		t.Fatalf("set env: %q", got)
	}
}

func TestRedactAndString(t *testing.T) {
	d, err := store.ParseDSN("postgres://u:hunter2@db.example/gh?durability=power")
	if err != nil {
		t.Fatal(err)
	}
	s := d.String()
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "u:xxxxx@db.example") || !strings.HasSuffix(s, "durability=power") {
		t.Fatalf("String() = %q", s)
	}
	if d.URL != "postgres://u:hunter2@db.example/gh" {
		t.Fatalf("URL = %q (the opener needs the password)", d.URL)
	}
	if got := store.Redact("postgres://u@db/x"); got != "postgres://u@db/x" {
		t.Fatalf("Redact without password = %q", got)
	}
	for _, in := range []string{"sqlite:a.db", "memory:", "sqlite:a.db?durability=power"} {
		d, err := store.ParseDSN(in)
		if err != nil {
			t.Fatal(err)
		}
		if d.String() != in {
			t.Errorf("String() of %q = %q", in, d.String())
		}
	}
}

func TestResolveOptions(t *testing.T) {
	o, err := store.ResolveOptions(store.DSN{}, nil)
	if err != nil || o.Durability != store.DurabilityProcess || o.Now == nil {
		t.Fatalf("defaults = %+v, %v", o, err)
	}
	o, err = store.ResolveOptions(store.DSN{Durability: store.DurabilityPower}, &store.Options{Durability: store.DurabilityProcess})
	if err != nil || o.Durability != store.DurabilityPower {
		t.Fatalf("DSN durability must win: %+v, %v", o, err)
	}
	if _, err := store.ResolveOptions(store.DSN{}, &store.Options{Durability: "sometimes"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad durability: %v", err)
	}
	if _, err := store.ResolveOptions(store.DSN{}, &store.Options{MaxConns: -1}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("negative MaxConns: %v", err)
	}
	if _, err := store.ResolveOptions(store.DSN{}, &store.Options{GroupCommit: "true"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad group commit: %v", err)
	}
	for _, g := range []store.GroupCommit{store.GroupCommitDefault, store.GroupCommitOn, store.GroupCommitOff} {
		if o, err := store.ResolveOptions(store.DSN{}, &store.Options{GroupCommit: g}); err != nil || o.GroupCommit != g {
			t.Fatalf("group commit %q: %+v, %v", g, o, err)
		}
	}
}

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"", "sqlite:g.db", "sqlite:g.db?durability=power", "memory:", "postgres://u:p@h:5432/d?sslmode=disable&durability=process",
		"postgresql://h/d", "sqlite://x", "sqlite::memory:", "mysql://x", "sqlite:a?b=c", "postgres:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, err := store.ParseDSN(in)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidDSN) {
				t.Fatalf("ParseDSN(%q) error %v does not wrap ErrInvalidDSN", in, err)
			}
			return
		}
		switch d.Kind {
		case store.KindSQLite:
			if d.Path == "" || strings.ContainsAny(d.Path, "?\x00") || strings.HasPrefix(d.Path, "//") {
				t.Fatalf("ParseDSN(%q) accepted path %q", in, d.Path)
			}
			// sqlite and memory DSNs round-trip through String.
			again, err := store.ParseDSN(d.String())
			if err != nil || again != d {
				t.Fatalf("round trip of %q: %+v -> %q -> %+v, %v", in, d, d.String(), again, err)
			}
		case store.KindMemory:
			if in[len(in)-1] != ':' {
				t.Fatalf("memory DSN %q accepted with trailing text", in)
			}
		case store.KindPostgres:
			// The durability parameter is removed from the query (a host
			// or path that merely spells "durability=" is not one).
			u, err := url.Parse(d.URL)
			if d.URL == "" || err != nil || u.Query().Has("durability") {
				t.Fatalf("ParseDSN(%q) URL = %q (%v)", in, d.URL, err)
			}
		default:
			t.Fatalf("ParseDSN(%q) kind %q", in, d.Kind)
		}
		if d.Durability != "" && d.Durability != store.DurabilityPower && d.Durability != store.DurabilityProcess {
			t.Fatalf("ParseDSN(%q) durability %q", in, d.Durability)
		}
	})
}
