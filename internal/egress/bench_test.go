package egress_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

func BenchmarkClassify(b *testing.B) {
	addrs := []netip.Addr{
		netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3"),
		netip.MustParseAddr("2606:4700:4700::1111"), netip.MustParseAddr("::ffff:169.254.169.254"),
	}
	for i := 0; b.Loop(); i++ {
		egress.Classify(addrs[i%len(addrs)])
	}
}

// BenchmarkGET compares a keep-alive GET on 127.0.0.1 through a guard client
// (header injection, request clone) with a plain http.Client.
func BenchmarkGET(b *testing.B) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer hs.Close()
	srv := hs.URL + "/"
	guarded, err := egress.New(nil).Client(srv, map[string]string{"X-Api-Key": "k"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer guarded.CloseIdleConnections()
	plainT := &http.Transport{}
	defer plainT.CloseIdleConnections()
	for _, c := range []struct {
		name string
		c    *http.Client
	}{{"guard", guarded}, {"plain", &http.Client{Transport: plainT}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := c.c.Get(srv)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
