package oauth

// SignatureChecks is how many token signatures v has checked: a token
// answered from the verified cache adds none.
func (v *Verifier) SignatureChecks() int64 { return v.signatureChecks.Load() }

// VerifiedLen is how many verified tokens v remembers.
func (v *Verifier) VerifiedLen() int {
	if v.verified == nil {
		return 0
	}
	return v.verified.len()
}
