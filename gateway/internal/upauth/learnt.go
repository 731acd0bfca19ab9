package upauth

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// learntClient is the egress guard's client for raw, a URL learnt from
// metadata while connecting s (its resource metadata, its authorization
// server, the token endpoint), named what in errors. raw's host is
// checked against allowedHosts before anything is sent (an error that
// names the URL and the host), and every dial, redirect included, is
// checked. The client is made for s's URL, not for raw: a loopback literal
// unlocks loopback only for a client made for one (package egress), so a
// remote server's metadata cannot point the gateway at its own loopback
// (an unlisted http://127.0.0.1:PORT is refused at dial time), while a
// server the operator configured on a loopback literal keeps its local
// authorization server. It carries no configured header. Close its idle
// connections when done.
func (m *Manager) learntClient(what string, s *Server, raw string) (*http.Client, error) {
	if err := m.guard.CheckURL(raw); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, raw, err)
	}
	return m.fetchClient(what+" (for "+s.Name+")", s.URL)
}

// checkLearnt is checkEndpoint for an endpoint learnt while connecting s:
// also refused, before the browser is sent anywhere, an unlisted loopback
// literal when s's own URL is not one (the token request would be refused
// at dial time; the browser is not sent to the user's loopback either).
func (m *Manager) checkLearnt(s *Server, raw string) error {
	if err := checkEndpoint(m.guard, raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if !loopbackLiteral(u.Hostname()) || m.o.AllowedHosts != nil || loopbackLiteral(hostOf(s.URL)) {
		return nil // not loopback; listed (CheckURL passed); or a local server
	}
	return fmt.Errorf("%s is a loopback address, and the server's URL is not", u.Host)
}

// loopbackLiteral reports whether host is a loopback address written
// plainly (127.0.0.0/8, ::1; no zone, not IPv4-mapped): what unlocks
// loopback in package egress.
func loopbackLiteral(host string) bool {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.Zone() == "" && !a.Is4In6() && a.IsLoopback() && egress.Classify(a) == egress.Loopback
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
