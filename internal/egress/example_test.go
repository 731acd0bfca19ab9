package egress_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// A guard without a host list: a loopback literal is fine, a name that
// resolves to loopback is not. (The resolver here is made up; by default the
// guard uses the system resolver.)
func ExampleGuard_Client() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "key=%s", r.Header.Get("X-Api-Key"))
	}))
	defer srv.Close()

	g := egress.New(&egress.Options{
		LookupIP: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
	})
	c, err := g.Client(srv.URL+"/mcp", map[string]string{"X-Api-Key": "k1"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()

	resp, err := c.Get(srv.URL + "/mcp")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	_, err = c.Get("http://rebind.example" + port + "/mcp")
	var e *egress.Error
	if errors.As(err, &e) {
		fmt.Println(e.Rule, e.Addr)
	}
	// Output:
	// 200 key=k1
	// unsafe-address 127.0.0.1
}

func ExampleGuard_CheckURL() {
	g := egress.New(&egress.Options{AllowedHosts: []string{"api.example.com"}})
	fmt.Println(g.CheckURL("https://API.example.com/mcp"))
	fmt.Println(g.CheckURL("https://api.example.com.evil.test/mcp"))
	// Output:
	// <nil>
	// egress: "api.example.com.evil.test": host is not in allowedHosts [host-not-allowed]
}
