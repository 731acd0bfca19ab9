// Package oauth verifies OAuth 2.1 JWT access tokens (RFC 9068) for a
// resource server and turns them into an [Identity], and checks opaque
// tokens by introspection (RFC 7662, [Introspector]): the gateway's
// auth.oauth (issue 15).
//
// A [Verifier] is made for one issuer and one resource (the audience) with
// [New]. [Verifier.Verify] checks, in this order:
//
//   - the token's length (at most [Options.MaxTokenSize], 16 KiB by default),
//     before anything is parsed;
//   - its form: a compact JWS with one signature whose alg is RS256, PS256,
//     ES256 or EdDSA. none and every HMAC are refused by the allow-list before
//     any key is looked at, so an HMAC keyed with a public key cannot verify;
//   - typ, when present: at+jwt or JWT, case-insensitive, with or without
//     "application/";
//   - the key: the issuer's key named by kid (a token without kid is accepted
//     only when the issuer has exactly one key for its alg), which must sign
//     that alg; keys embedded in the token (jwk, x5c, jku) are never used;
//   - the signature;
//   - exp (required), nbf and iat, with [Options.Skew] (60s by default);
//     iss, exactly [Options.Issuer]; aud, containing [Options.Audience]
//     exactly (RFC 8707);
//   - the subject claim (a non-empty string) and the scopes (a
//     space-separated string or an array of strings).
//
// Every refusal is an [*Error] whose [Reason] a caller branches on; its text
// never contains the token.
//
// # Keys
//
// The issuer's keys come from [Options.JWKSURL] or, when it is empty, from
// the jwks_uri of its RFC 8414 metadata (/.well-known/oauth-authorization-server
// inserted before the issuer's path) or else its OpenID metadata
// (/.well-known/openid-configuration appended); the metadata's issuer must
// equal [Options.Issuer] exactly. Only public signing keys of allowed kinds
// are kept (RSA of 2048 bits or more, P-256, Ed25519; use "sig" or absent);
// the others are skipped and logged.
//
// The key set is fetched by the first Verify and kept. It is fetched again
// when its life ends (the JWKS response's Cache-Control max-age, at most
// [Options.MaxCacheLife], 1h by default) and when a token names a kid it does
// not hold; never more than once per [Options.RefreshInterval] (10s by
// default), however many tokens name unknown kids, and concurrent calls share
// one fetch. A failed refresh keeps the keys it has: an issuer that is down
// does not fail tokens whose key is cached. The Verifier starts no goroutine;
// the call that triggers a fetch performs it (bounded by
// [Options.FetchTimeout]) and the others that need it wait for it or for
// their context.
//
// # Verified tokens
//
// A session presents the same access token with every request, so the
// Verifier remembers the tokens that verified, up to [Options.VerifiedCache]
// of them (10,000 by default; negative disables), and answers a token it
// remembers without checking its signature again: about 1 µs instead of
// 50–80 µs. It remembers a token by its SHA-256, never the token itself,
// with the identity, the token's exp, nbf and iat, and the key that
// verified it: its kid and alg and the generation of the key set it entered
// (a key that a refresh still holds unchanged keeps its generation). A
// remembered token is answered only
//
//   - after the key set is refreshed if it is due, exactly as for a token
//     verified in full;
//   - while the current key set would pick that very key for it: a refresh
//     that drops the key, or replaces it under the same kid, ends every
//     token it verified (which is then verified in full and refused), so
//     revoking by removing a key at the issuer holds as before, at the
//     refresh;
//   - while exp, nbf and iat pass at the current time with [Options.Skew],
//     with the same refusal as a full verify when they do not.
//
// Refusals are never remembered: a refused token costs what it costs
// without the cache, and a flood of refused tokens neither grows the cache
// nor evicts a remembered one. Only tokens that verify (which only the
// issuer can mint) take room, and when the cache is full the least recently
// used one is forgotten (O(1)). The Identity returned is the caller's own
// copy. A remembered token is not checked against anything the issuer says
// after it was verified other than its key set: like a full verify, this
// package knows nothing of a token revoked at the issuer before its exp.
//
// # Opaque tokens
//
// An [Introspector] ([NewIntrospector]) checks tokens that are not JWTs by
// asking the authorization server (RFC 7662): it POSTs the token, with
// token_type_hint=access_token, to [IntrospectorOptions.URL], authenticated
// as the resource server by client_secret_basic (id and secret
// form-encoded, RFC 6749 §2.3.1), following no redirect (its default client),
// within [IntrospectorOptions.Timeout]. Only a 200 answer of at most
// [MaxIntrospectionResponse] bytes that is one JSON object, with member
// names matched exactly and none given twice, is read; anything else
// (unreachable, 401 for the resource server's credentials, another status,
// too large, not JSON, no boolean active) is [ReasonIntrospection], the
// authorization server's fault. active false is [ReasonInactive]. An
// active answer must carry sub (a string) and exp (a NumericDate), or it is
// [ReasonMalformed]; exp, nbf and iat are checked with the skew as a JWT's
// are; iss, when present, must equal [IntrospectorOptions.Issuer] and aud,
// when present, must contain [IntrospectorOptions.Audience] (an answer
// without them is taken on the authorization server's word). The Subject is
// built as a JWT's is; the scopes come from scope.
//
// A positive answer is remembered by the token's SHA-256, in an LRU of the
// same kind as the verified tokens', until the token's exp or
// [IntrospectorOptions.CacheTTL] (5 minutes by default) after it was given,
// whichever is first: a token revoked at the authorization server is
// accepted for at most that long. Negative answers and failures are never
// remembered, so each presentation of a refused token is one POST.
//
// # Choices
//
// The JOSE library is github.com/go-jose/go-jose/v4: a module with no
// dependencies of its own (golang-jwt/jwt/v5 needs a second module for JWKS,
// e.g. MicahParks/keyfunc and jwkset; lestrrat-go/jwx/v3 brings several
// modules of its own), whose parser takes the algorithm allow-list as an
// argument (an unexpected alg is a typed parse error, before any key is
// used), which reads JWKs itself (jose.JSONWebKey), and which is well kept
// (the fork of square/go-jose that the Go ecosystem settled on, used by
// coreos/go-oidc). Fetching, caching and rate limiting are ours, because
// they are where a resource server's policy lives.
//
// The subject is the issuer, "#", and the subject claim's value: an issuer
// identifier has no fragment, so two issuers cannot produce the same
// Subject. A token without exp, or whose sub is absent or empty, is
// [ReasonMalformed]. http is accepted only for loopback issuers.
package oauth
