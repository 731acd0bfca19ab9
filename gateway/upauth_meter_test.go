package gateway

import (
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
)

// TestConnectMeter: the gateway's /connect/* answers 429 with Retry-After
// past 30 requests a minute from one client address.
func TestConnectMeter(t *testing.T) {
	e := startUserGatewayOn(t, userSetup{tokens: &upstream.MemoryTokens{}})
	get := func() *http.Response {
		t.Helper()
		resp, err := http.Get(e.url + "/connect/up?flow=made-up")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := range 30 {
		if resp := get(); resp.StatusCode != http.StatusGone {
			t.Fatalf("request %d: %d", i+1, resp.StatusCode)
		}
	}
	if resp := get(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("request 31: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
