package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// keySet is one fetched JWKS, reduced to the keys this package can use.
type keySet struct {
	byKID map[string][]*setKey
	all   []*setKey
}

// setKey is a key of a key set and the generation of the set it entered:
// a key that the next fetch still holds (same kid, alg and public key) keeps
// its generation, so the tokens it verified stay in the verified cache; a
// key that a fetch drops or replaces is gone for them.
type setKey struct {
	jose.JSONWebKey
	born uint64
}

// adopt numbers set's keys for generation gen, carrying over the generation
// of every key that prev holds unchanged.
func (set *keySet) adopt(prev *keySet, gen uint64) {
	for _, k := range set.all {
		k.born = gen
		if prev == nil {
			continue
		}
		candidates := prev.byKID[k.KeyID]
		if k.KeyID == "" {
			candidates = prev.all
		}
		for _, p := range candidates {
			if p.KeyID == k.KeyID && p.Algorithm == k.Algorithm && samePublic(p.Key, k.Key) {
				k.born = p.born
				break
			}
		}
	}
}

// samePublic says whether a and b are the same public key.
func samePublic(a, b any) bool {
	switch a := a.(type) {
	case *rsa.PublicKey:
		return a.Equal(b)
	case *ecdsa.PublicKey:
		return a.Equal(b)
	case ed25519.PublicKey:
		return a.Equal(b)
	}
	return false
}

// flight is one fetch in progress; concurrent callers wait on done.
type flight struct {
	done chan struct{}
	err  *Error
}

// key returns the public key that verifies a token with this kid and alg.
func (v *Verifier) key(ctx context.Context, kid, alg string) (*setKey, *Error) {
	if v.current(ctx) == nil {
		if e := v.refresh(ctx, true); e != nil {
			return nil, e
		}
	}
	k, e := v.find(kid, alg)
	if k != nil || e != nil {
		return k, e
	}
	// Unknown: the issuer may have rotated. One refresh per interval, shared.
	if e := v.refresh(ctx, true); e != nil {
		v.log.Warn("oauth: key set refresh for an unknown key failed", "err", e.Error())
	}
	if k, e = v.find(kid, alg); k != nil || e != nil {
		return k, e
	}
	if kid == "" {
		return nil, refuse(ReasonUnknownKey, nil, "token names no kid and the issuer has no %s key", short(alg))
	}
	return nil, refuse(ReasonUnknownKey, nil, "issuer has no key %s", short(kid))
}

// current returns the cached key set (nil if none was fetched yet), first
// refreshing it when it is due: best effort, so that the cached keys serve
// while the issuer is down.
func (v *Verifier) current(ctx context.Context) *keySet {
	v.mu.Lock()
	set, stale := v.set, !v.now().Before(v.expires)
	v.mu.Unlock()
	if set == nil || !stale {
		return set
	}
	v.refresh(ctx, false)
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.set
}

// find looks kid up in the cached set.
func (v *Verifier) find(kid, alg string) (*setKey, *Error) {
	v.mu.Lock()
	set := v.set
	v.mu.Unlock()
	return findIn(set, kid, alg)
}

// findIn looks kid up in set: (key, nil) when found, (nil, nil) when a
// refresh might find it, (nil, err) when it cannot be used.
func findIn(set *keySet, kid, alg string) (*setKey, *Error) {
	if set == nil {
		return nil, nil
	}
	if kid != "" {
		ks := set.byKID[kid]
		for _, k := range ks {
			if signs(k.JSONWebKey, alg) {
				return k, nil
			}
		}
		if len(ks) > 0 {
			return nil, refuse(ReasonAlgorithm, nil, "key %s does not sign %s", short(kid), short(alg))
		}
		return nil, nil
	}
	var found *setKey
	n := 0
	for _, k := range set.all {
		if signs(k.JSONWebKey, alg) {
			found = k
			n++
		}
	}
	switch n {
	case 0:
		return nil, nil
	case 1:
		return found, nil
	}
	return nil, refuse(ReasonUnknownKey, nil, "token names no kid and the issuer has %d %s keys", n, short(alg))
}

// signs says whether k verifies alg.
func signs(k jose.JSONWebKey, alg string) bool {
	if k.Algorithm != "" && k.Algorithm != alg {
		return false
	}
	switch k.Key.(type) {
	case *rsa.PublicKey:
		return alg == string(jose.RS256) || alg == string(jose.PS256)
	case *ecdsa.PublicKey:
		return alg == string(jose.ES256)
	case ed25519.PublicKey:
		return alg == string(jose.EdDSA)
	}
	return false
}

// refresh fetches the key set unless one was fetched less than the refresh
// interval ago. If a fetch is already in flight, join waits for it and
// returns its outcome, and !join returns at once.
func (v *Verifier) refresh(ctx context.Context, join bool) *Error {
	v.mu.Lock()
	if f := v.flight; f != nil {
		v.mu.Unlock()
		if !join {
			return nil
		}
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return refuse(ReasonIssuerUnavailable, ctx.Err(), "waiting for the issuer's keys")
		}
	}
	now := v.now()
	if v.attempted && now.Before(v.lastAttempt.Add(v.interval)) {
		// Fetched less than the interval ago: its outcome stands. A
		// success is not an error: a caller that saw no keys before a
		// concurrent first fetch ended finds them now.
		last := v.lastErr
		v.mu.Unlock()
		return last
	}
	f := &flight{done: make(chan struct{})}
	v.flight, v.attempted, v.lastAttempt = f, true, now
	v.mu.Unlock()

	set, life, e := v.fetch(ctx)

	v.mu.Lock()
	if e == nil {
		v.gen++
		set.adopt(v.set, v.gen)
		v.set, v.expires = set, v.now().Add(life)
	}
	v.lastErr, v.flight, f.err = e, nil, e
	v.mu.Unlock()
	close(f.done)
	if e != nil {
		v.log.Warn("oauth: fetching the issuer's keys failed", "issuer", v.issuer, "err", e.Error())
	} else {
		v.log.Info("oauth: fetched the issuer's keys", "issuer", v.issuer, "jwks", v.jwksURL, "keys", len(set.all), "life", life)
	}
	return e
}

// fetch discovers the JWKS URL if needed and fetches the key set. It runs
// only in a flight's leader, so it may write v.jwksURL. The caller's
// cancellation does not abort it (others may be waiting); FetchTimeout does.
func (v *Verifier) fetch(ctx context.Context) (*keySet, time.Duration, *Error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.timeout)
	defer cancel()
	if v.jwksURL == "" {
		u, e := v.discover(ctx)
		if e != nil {
			return nil, 0, e
		}
		v.jwksURL = u
	}
	status, body, header, err := v.get(ctx, v.jwksURL)
	if err != nil {
		return nil, 0, refuse(ReasonIssuerUnavailable, err, "fetching the key set")
	}
	if status != http.StatusOK {
		return nil, 0, refuse(ReasonIssuerUnavailable, nil, "key set %s answered %d", v.jwksURL, status)
	}
	set, skipped, err := parseKeySet(body)
	if err != nil {
		return nil, 0, refuse(ReasonMetadata, err, "key set %s", v.jwksURL)
	}
	for _, s := range skipped {
		v.log.Warn("oauth: skipped a key of the issuer's key set", "issuer", v.issuer, "why", s)
	}
	return set, cacheLife(header.Get("Cache-Control"), v.maxLife), nil
}

// discover reads the issuer's RFC 8414 metadata, else its OpenID metadata,
// and returns its jwks_uri.
func (v *Verifier) discover(ctx context.Context) (string, *Error) {
	for _, endpoint := range v.discoveryEndpoints {
		status, body, _, err := v.get(ctx, endpoint)
		if err != nil {
			return "", refuse(ReasonIssuerUnavailable, err, "discovering the issuer's metadata")
		}
		if status != http.StatusOK {
			continue
		}
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := json.Unmarshal(body, &md); err != nil {
			return "", refuse(ReasonMetadata, err, "metadata at %s is not a JSON object", endpoint)
		}
		if md.Issuer != v.issuer {
			return "", refuse(ReasonMetadata, nil, "metadata at %s names issuer %s, not %s", endpoint, short(md.Issuer), v.issuer)
		}
		if md.JWKSURI == "" {
			return "", refuse(ReasonMetadata, nil, "metadata at %s has no jwks_uri", endpoint)
		}
		if _, err := checkURL(md.JWKSURI); err != nil {
			return "", refuse(ReasonMetadata, err, "metadata at %s: jwks_uri", endpoint)
		}
		return md.JWKSURI, nil
	}
	return "", refuse(ReasonIssuerUnavailable, nil, "the issuer serves no metadata at %s", strings.Join(v.discoveryEndpoints, " or "))
}

// get fetches u and reads at most maxDocument bytes of its body.
func (v *Verifier) get(ctx context.Context, u string) (int, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if len(body) > maxDocument {
		return 0, nil, nil, fmt.Errorf("%s answered more than %d bytes", u, maxDocument)
	}
	return resp.StatusCode, body, resp.Header, nil
}

// parseKeySet reads a JWKS, keeping the public signing keys this package can
// use (RSA of at least 2048 bits, P-256, Ed25519) and saying why it skipped
// the others. A set with no usable key is an error.
func parseKeySet(body []byte) (*keySet, []string, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, fmt.Errorf("not a JWKS: %w", err)
	}
	set := &keySet{byKID: map[string][]*setKey{}}
	var skipped []string
	for i, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			skipped = append(skipped, fmt.Sprintf("key %d (kid %s): use %q", i, short(k.KeyID), k.Use))
			continue
		}
		switch key := k.Key.(type) {
		case *rsa.PrivateKey:
			k.Key = &key.PublicKey
		case *ecdsa.PrivateKey:
			k.Key = &key.PublicKey
		case ed25519.PrivateKey:
			k.Key = key.Public()
		}
		why := ""
		switch key := k.Key.(type) {
		case *rsa.PublicKey:
			if key.N.BitLen() < 2048 {
				why = fmt.Sprintf("RSA key of %d bits", key.N.BitLen())
			}
		case *ecdsa.PublicKey:
			if key.Curve != elliptic.P256() {
				why = "EC key not on P-256"
			}
		case ed25519.PublicKey:
		default:
			why = fmt.Sprintf("key type %T cannot verify an allowed algorithm", k.Key)
		}
		if why == "" && k.Algorithm != "" && !allowed(k.Algorithm) {
			why = fmt.Sprintf("alg %q is not allowed", k.Algorithm)
		}
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("key %d (kid %s): %s", i, short(k.KeyID), why))
			continue
		}
		sk := &setKey{JSONWebKey: k}
		set.all = append(set.all, sk)
		if k.KeyID != "" {
			set.byKID[k.KeyID] = append(set.byKID[k.KeyID], sk)
		}
	}
	if len(set.all) == 0 {
		return nil, skipped, fmt.Errorf("no usable signing key among %d", len(doc.Keys))
	}
	return set, skipped, nil
}

func allowed(alg string) bool {
	for _, a := range allowedAlgs {
		if string(a) == alg {
			return true
		}
	}
	return false
}

// cacheLife reads a Cache-Control header's max-age, bounded by maxLife
// (which is also the life when there is none). no-store and no-cache mean
// zero: refresh at the next chance (still at most once per interval). A
// directive that does not parse is ignored.
func cacheLife(cc string, maxLife time.Duration) time.Duration {
	life := maxLife
	for _, d := range strings.Split(cc, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "no-store", "no-cache":
			return 0
		case "max-age":
			n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(value), `"`), 10, 64)
			if err != nil || n < 0 {
				continue
			}
			if n < int64(maxLife/time.Second) {
				life = time.Duration(n) * time.Second
			}
		}
	}
	return life
}
