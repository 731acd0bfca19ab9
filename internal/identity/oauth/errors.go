package oauth

import "fmt"

// Reason says why a token was refused, so that a caller can branch on it
// (an HTTP front answers 401 for the token's faults and 503 for
// [ReasonIssuerUnavailable], [ReasonMetadata] and [ReasonIntrospection],
// which are the issuer's).
type Reason int

const (
	// ReasonMalformed: the token is not a compact JWS JWT, or a claim it needs
	// (sub, exp, the scopes) is absent or of the wrong type.
	ReasonMalformed Reason = iota + 1
	// ReasonTooLarge: the token is longer than [Options.MaxTokenSize]; it was
	// not parsed.
	ReasonTooLarge
	// ReasonAlgorithm: the token's alg is not one of RS256, PS256, ES256 and
	// EdDSA (none and every HMAC are refused), or the named key does not sign
	// with it.
	ReasonAlgorithm
	// ReasonType: the token's typ header is present and is neither at+jwt nor
	// JWT.
	ReasonType
	// ReasonUnknownKey: the issuer's key set has no key the token names (after
	// at most one rate-limited refresh).
	ReasonUnknownKey
	// ReasonSignature: the signature does not verify with the named key.
	ReasonSignature
	// ReasonIssuer: iss is not exactly [Options.Issuer].
	ReasonIssuer
	// ReasonAudience: aud does not contain [Options.Audience] (RFC 8707).
	ReasonAudience
	// ReasonExpired: exp is past (beyond the skew).
	ReasonExpired
	// ReasonNotYetValid: nbf or iat is in the future (beyond the skew).
	ReasonNotYetValid
	// ReasonIssuerUnavailable: no key set could be fetched and none is cached.
	ReasonIssuerUnavailable
	// ReasonMetadata: the issuer's metadata is unusable: its issuer is not
	// exactly [Options.Issuer], or it names no usable jwks_uri.
	ReasonMetadata
	// ReasonInactive: the introspection endpoint answered that the token is
	// not active (RFC 7662 §2.2): unknown, revoked or expired at the
	// authorization server.
	ReasonInactive
	// ReasonIntrospection: the token could not be introspected: the endpoint
	// is unreachable, refused the resource server's credentials, or answered
	// something other than a bounded RFC 7662 JSON response. The token may be
	// fine.
	ReasonIntrospection
)

var reasonNames = [...]string{
	ReasonMalformed:         "malformed",
	ReasonTooLarge:          "too_large",
	ReasonAlgorithm:         "algorithm",
	ReasonType:              "type",
	ReasonUnknownKey:        "unknown_key",
	ReasonSignature:         "signature",
	ReasonIssuer:            "issuer",
	ReasonAudience:          "audience",
	ReasonExpired:           "expired",
	ReasonNotYetValid:       "not_yet_valid",
	ReasonIssuerUnavailable: "issuer_unavailable",
	ReasonMetadata:          "metadata",
	ReasonInactive:          "inactive",
	ReasonIntrospection:     "introspection",
}

// String returns the reason's stable snake_case name (e.g. "expired").
func (r Reason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Error is the error [Verifier.Verify] and [Introspector.Introspect] return
// for every refused token. Its
// text names the reason and a detail; it never contains the token or any part
// of it.
type Error struct {
	Reason Reason
	// Detail is a short human-readable explanation (e.g. "exp is 2m0s past").
	Detail string
	// Err is the underlying cause, if any (a go-jose or HTTP error). It does
	// not contain the token either.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	s := "oauth: token refused (" + e.Reason.String() + ")"
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

func refuse(r Reason, err error, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...), Err: err}
}
