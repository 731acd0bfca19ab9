package oauth

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// DefaultVerifiedCache is the default bound of [Options.VerifiedCache].
const DefaultVerifiedCache = 10_000

// verifiedCache remembers tokens that verified, keyed by the SHA-256 of the
// token (never the token), in least-recently-used order: a hit moves its
// entry to the front, an insert into a full cache evicts the back. Both are
// O(1). Refusals never enter it.
type verifiedCache struct {
	max int

	mu         sync.Mutex
	m          map[[32]byte]*verified
	head, tail *verified // head is the most recently used
}

// verified is one token that verified: what it speaks for, when it is valid,
// and which key verified it.
type verified struct {
	hash       [32]byte
	id         Identity
	nbf, iat   time.Time // zero when the token has none
	kid, alg   string
	born       uint64    // the generation the verifying key entered the key set
	until      time.Time // an introspected token: when the entry ends (zero for a verified JWT)
	prev, next *verified
}

func newVerifiedCache(max int) *verifiedCache {
	return &verifiedCache{max: max, m: make(map[[32]byte]*verified, min(max, 1024))}
}

// get returns a copy of the entry for h and marks it used.
func (c *verifiedCache) get(h [32]byte) (verified, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[h]
	if e == nil {
		return verified{}, false
	}
	c.unlink(e)
	c.pushFront(e)
	return *e, true
}

// put adds e (or replaces the entry of its hash), evicting the least recently
// used entry when the cache is full.
func (c *verifiedCache) put(e *verified) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[e.hash]; old != nil {
		c.unlink(old)
	} else if len(c.m) >= c.max {
		lru := c.tail
		c.unlink(lru)
		delete(c.m, lru.hash)
	}
	c.m[e.hash] = e
	c.pushFront(e)
}

// remove drops the entry for h, if any.
func (c *verifiedCache) remove(h [32]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[h]; e != nil {
		c.unlink(e)
		delete(c.m, h)
	}
}

func (c *verifiedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func (c *verifiedCache) unlink(e *verified) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (c *verifiedCache) pushFront(e *verified) {
	e.next = c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}

// cached answers token from the cache of verified tokens. ok is false on a
// miss, and also when the key that verified the token is no longer the one
// the current key set would use for it: then the entry is dropped and the
// caller verifies in full (which refuses the token if its key is gone). On a
// hit the token's exp, nbf and iat are checked at now with the skew, exactly
// as a full verify checks them; a token that is no longer valid is refused
// and dropped.
func (v *Verifier) cached(ctx context.Context, h [32]byte) (id Identity, e *Error, ok bool) {
	ent, ok := v.verified.get(h)
	if !ok {
		return Identity{}, nil, false
	}
	// The key set is refreshed when due, as a full verify would (best
	// effort); a refresh that removed or replaced the key ends the entry.
	k, _ := findIn(v.current(ctx), ent.kid, ent.alg)
	if k == nil || k.born != ent.born {
		v.verified.remove(h)
		return Identity{}, nil, false
	}
	if e := timeRefusal(v.now(), v.skew, ent.id.Expiry, ent.nbf, ent.iat); e != nil {
		v.verified.remove(h)
		return Identity{}, e, true
	}
	id = ent.id
	id.Scopes = slices.Clip(slices.Clone(id.Scopes)) // the caller may change its copy
	return id, nil, true
}

// timeRefusal checks exp, nbf and iat at now with skew as go-jose's
// Claims.ValidateWithLeeway does, with the same refusals as a full verify.
func timeRefusal(now time.Time, skew time.Duration, exp, nbf, iat time.Time) *Error {
	switch {
	case !nbf.IsZero() && now.Add(skew).Before(nbf):
		return refuse(ReasonNotYetValid, nil, "nbf is %v ahead", nbf.Sub(now).Round(time.Second))
	case now.Add(-skew).After(exp):
		return refuse(ReasonExpired, nil, "exp is %v past", now.Sub(exp).Round(time.Second))
	case !iat.IsZero() && now.Add(skew).Before(iat):
		return refuse(ReasonNotYetValid, nil, "iat is %v ahead", iat.Sub(now).Round(time.Second))
	}
	return nil
}

// tokenHash is the cache's key for a token.
func tokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }
