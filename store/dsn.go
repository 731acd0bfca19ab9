package store

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// envStore is the environment variable that overrides a configured DSN.
const envStore = "GATEHOUSE_STORE"

// Kind is the kind of store a DSN names.
type Kind string

// Store kinds.
const (
	KindSQLite   Kind = "sqlite"
	KindPostgres Kind = "postgres"
	KindMemory   Kind = "memory"
)

// DSN is a parsed data source name.
type DSN struct {
	Kind Kind
	// Path is the SQLite file path (KindSQLite only), verbatim.
	Path string
	// URL is the PostgreSQL connection URL (KindPostgres only) with the
	// durability parameter removed; it may hold a password.
	URL string
	// Durability is the DSN's durability parameter, if any.
	Durability Durability
}

// String returns the DSN with any password redacted, suitable for logs.
func (d DSN) String() string {
	var s string
	switch d.Kind {
	case KindSQLite:
		s = "sqlite:" + d.Path
	case KindMemory:
		s = "memory:"
	case KindPostgres:
		s = Redact(d.URL)
	default:
		return ""
	}
	if d.Durability != "" {
		sep := "?"
		if strings.Contains(s, "?") {
			sep = "&"
		}
		s += sep + "durability=" + string(d.Durability)
	}
	return s
}

// DSNFromEnv returns $GATEHOUSE_STORE when it is set and not empty, and
// configured otherwise. Callers decide whether to apply it.
func DSNFromEnv(configured string) string {
	if v := os.Getenv(envStore); v != "" {
		return v
	}
	return configured
}

// Redact returns dsn with the password of a URL replaced by "xxxxx".
// Strings that are not URLs with a password are returned unchanged.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		if err != nil && strings.Contains(dsn, "@") {
			return "(unparseable DSN redacted)"
		}
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func dsnErr(specific error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if specific == nil {
		return fmt.Errorf("%w: %s", ErrInvalidDSN, msg)
	}
	return &dsnError{specific: specific, msg: msg}
}

// dsnError is an invalid DSN with a more specific reason; it reads
// "store: invalid DSN: unknown DSN scheme: ..." (the package prefix once)
// and matches both errors.
type dsnError struct {
	specific error
	msg      string
}

func (e *dsnError) Error() string {
	return ErrInvalidDSN.Error() + ": " + strings.TrimPrefix(e.specific.Error(), "store: ") + ": " + e.msg
}

func (e *dsnError) Unwrap() []error { return []error{ErrInvalidDSN, e.specific} }

// ParseDSN parses a store DSN:
//
//	sqlite:PATH[?durability=process|power]   PATH is a file path, taken verbatim
//	postgres://... or postgresql://...        a libpq URL (durability= is accepted and removed)
//	memory:                                   a fresh in-memory store
//
// "sqlite://..." is refused as ambiguous (write sqlite:/abs/path or
// sqlite:rel/path), as are ":memory:" (use memory:), a PATH containing '?'
// other than the parameter, and "file:" URIs. Every error wraps
// ErrInvalidDSN and, where one applies, a more specific sentinel.
func ParseDSN(s string) (DSN, error) {
	if strings.TrimSpace(s) == "" {
		return DSN{}, dsnErr(ErrEmptyDSN, "a store DSN is required (sqlite:PATH, postgres://..., memory:)")
	}
	if s != strings.TrimSpace(s) {
		return DSN{}, dsnErr(nil, "DSN has leading or trailing spaces")
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" {
		return DSN{}, dsnErr(ErrUnknownScheme, "DSN %q has no scheme (want sqlite:PATH, postgres://..., memory:)", Redact(s))
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		return parseSQLite(rest)
	case "memory":
		if rest != "" {
			return DSN{}, dsnErr(nil, "memory: takes no path or parameters, got %q", rest)
		}
		return DSN{Kind: KindMemory}, nil
	case "postgres", "postgresql":
		return parsePostgres(s)
	default:
		return DSN{}, dsnErr(ErrUnknownScheme, "scheme %q (want sqlite, postgres, postgresql or memory)", scheme)
	}
}

func parseDurability(v string) (Durability, error) {
	switch d := Durability(v); d {
	case DurabilityProcess, DurabilityPower:
		return d, nil
	}
	return "", dsnErr(nil, "durability %q (want process or power)", v)
}

func parseSQLite(rest string) (DSN, error) {
	path, query, hasQuery := strings.Cut(rest, "?")
	d := DSN{Kind: KindSQLite, Path: path}
	switch {
	case path == "":
		return DSN{}, dsnErr(ErrMissingPath, "write sqlite:PATH, for example sqlite:./gatehouse.db")
	case strings.HasPrefix(path, "//"):
		return DSN{}, dsnErr(nil, "sqlite://%s is ambiguous; write sqlite:/absolute/path or sqlite:relative/path", strings.TrimPrefix(path, "//"))
	case path == ":memory:" || strings.HasPrefix(path, ":memory:"):
		return DSN{}, dsnErr(nil, "sqlite::memory: is not supported; use memory: for an in-memory store")
	case strings.HasPrefix(strings.ToLower(path), "file:"):
		return DSN{}, dsnErr(nil, "sqlite:file: URIs are not supported; write sqlite:PATH")
	case strings.ContainsRune(path, 0):
		return DSN{}, dsnErr(nil, "sqlite path contains a NUL byte")
	case path != strings.TrimSpace(path):
		// "sqlite: ?" passes the whole DSN's check; its path does not.
		return DSN{}, dsnErr(nil, "sqlite path %q has leading or trailing spaces", path)
	}
	if hasQuery {
		q, err := url.ParseQuery(query)
		if err != nil {
			return DSN{}, dsnErr(nil, "sqlite parameters %q: %v (a path may not contain '?')", query, err)
		}
		for k, vs := range q {
			if k != "durability" {
				return DSN{}, dsnErr(nil, "unknown sqlite parameter %q (only durability is accepted; a path may not contain '?')", k)
			}
			dur, err := durabilityParam(vs)
			if err != nil {
				return DSN{}, err
			}
			d.Durability = dur
		}
	}
	return d, nil
}

// durabilityParam reads the values of a DSN's durability parameter: one.
func durabilityParam(vs []string) (Durability, error) {
	if len(vs) != 1 {
		return "", dsnErr(nil, "durability given %d times", len(vs))
	}
	return parseDurability(vs[0])
}

func parsePostgres(s string) (DSN, error) {
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the input, which may hold a password.
		return DSN{}, dsnErr(nil, "postgres URL does not parse")
	}
	if u.Opaque != "" || !strings.HasPrefix(s[len(u.Scheme)+1:], "//") {
		return DSN{}, dsnErr(nil, "write postgres://[user[:password]@]host[:port]/database[?params]")
	}
	d := DSN{Kind: KindPostgres}
	q := u.Query()
	if vs, ok := q["durability"]; ok {
		dur, err := durabilityParam(vs)
		if err != nil {
			return DSN{}, err
		}
		d.Durability = dur
		q.Del("durability")
		u.RawQuery = q.Encode()
	}
	d.URL = u.String()
	return d, nil
}

// ResolveOptions returns a copy of opts (nil means defaults) with the DSN's
// durability applied over it; it validates the durability.
func ResolveOptions(d DSN, opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if d.Durability != "" {
		o.Durability = d.Durability
	}
	if o.Durability == "" {
		o.Durability = DurabilityProcess
	}
	if o.Durability != DurabilityProcess && o.Durability != DurabilityPower {
		return Options{}, fmt.Errorf("%w: durability %q (want process or power)", ErrInvalid, o.Durability)
	}
	if o.Now == nil {
		o.Now = timeNow
	}
	if o.GroupCommit != GroupCommitDefault && o.GroupCommit != GroupCommitOn && o.GroupCommit != GroupCommitOff {
		return Options{}, fmt.Errorf("%w: group commit %q (want on, off, or empty for the store's default)", ErrInvalid, o.GroupCommit)
	}
	if o.MaxConns < 0 || o.BusyTimeout < 0 {
		return Options{}, fmt.Errorf("%w: negative MaxConns or BusyTimeout", ErrInvalid)
	}
	return o, nil
}
