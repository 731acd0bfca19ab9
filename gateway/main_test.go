package gateway

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// staticAuthenticator is newAuthenticator for a config without auth.oauth
// (which cannot fail).
func staticAuthenticator(a *Auth) *authenticator {
	au, err := newAuthenticator(a, nil, time.Now)
	if err != nil {
		panic(err)
	}
	return au
}
