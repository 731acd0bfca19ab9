package gateway

import (
	"crypto/ed25519"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/auditlog"
)

// AuditPublicKey returns the public half of the key that signs the audit
// trail's checkpoints (audit.signingKeyFile or audit.signingKeyEnv): what
// the operator console verifies them with. Nil when checkpoints are not
// signed.
func (g *Gateway) AuditPublicKey() ed25519.PublicKey {
	k, err := auditlog.Key(g.cfg)
	if err != nil || k == nil {
		return nil
	}
	pub, _ := k.Public().(ed25519.PublicKey)
	return pub
}
