package gateway

import (
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/bearer"
)

// The gateway as an OAuth 2.1 resource server (auth.resource, auth.oauth):
// access tokens verified by identity/oauth, challenges per RFC 6750 §3 and
// RFC 9728 §5.1, and the Protected Resource Metadata (RFC 9728).

// serveResourceMetadata serves the Protected Resource Metadata of
// auth.resource on mux, without a token, at the well-known path, at it
// followed by /mcp, and at the path metadataURL names.
func (g *Gateway) serveResourceMetadata(mux *http.ServeMux) {
	a := g.cfg.Auth
	if a == nil || a.Resource == "" {
		return
	}
	md := &oauthex.ProtectedResourceMetadata{
		Resource:               a.Resource,
		BearerMethodsSupported: []string{"header"},
	}
	if a.OAuth != nil {
		md.AuthorizationServers = []string{a.OAuth.Issuer}
		md.ScopesSupported = append(slices.Clip(a.OAuth.RequiredScopes), "tool:*", "skill:*")
	}
	h := auth.ProtectedResourceMetadataHandler(md)
	for _, p := range bearer.MetadataPaths(a.Resource) {
		mux.Handle(p, h)
	}
}
