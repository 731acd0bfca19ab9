package gateway

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
	"github.com/gatehouse-dev/gatehouse/gateway/internal/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// staticAuthenticator is bearer.NewAuthenticator for a config without auth.oauth
// (which cannot fail).
func staticAuthenticator(a *config.Auth) *bearer.Authenticator {
	au, err := bearer.NewAuthenticator(a, nil, time.Now)
	if err != nil {
		panic(err)
	}
	return au
}
