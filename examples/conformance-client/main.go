// Command conformance-client runs the scenarios of the official MCP
// conformance suite's client side (npx @modelcontextprotocol/conformance
// client --command ...) through Gatehouse's agent side: package toolset
// and its OAuth client for upstreams (package identity/upstream). It
// mirrors the go-sdk's own conformance everything-client, which
// scripts/conformance.sh runs beside it as the baseline.
//
//	MCP_CONFORMANCE_SCENARIO=auth/metadata-default conformance-client http://localhost:PORT/mcp
//
// The server URL is the one argument; the scenario is named by
// MCP_CONFORMANCE_SCENARIO, and MCP_CONFORMANCE_CONTEXT may carry a JSON
// object (pre-registered client credentials, tool calls). Each scenario
// opens a toolset with the server (prefix "", so names are the server's
// own), the auth/* scenarios with Server.OAuth set (a Client ID Metadata
// Document, the context's pre-registered client, dynamic registration;
// the authorization walked without a browser through the egress guard).
// The tool-map scenarios call through the toolset (Tools, Call); those that
// need client features a tool map does not have (elicitation, the raw
// listing, resources and prompts) open a session of their own through the
// toolset's Upstream.Connect, on the same transport, guard and OAuth
// handler.
//
// Local hosts (localhost, 127.0.0.1, ::1) are on the egress guard's host
// list: the suite's servers are local.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// redirect is the redirect URI the suite's authorization servers expect.
const redirect = "http://localhost:3000/callback"

type scenario func(ctx context.Context, serverURL string, cc map[string]any) error

func scenarios() map[string]scenario {
	m := map[string]scenario{
		"initialize":                          runInitialize,
		"tools_call":                          runToolsCall,
		"request-metadata":                    runInitialize,
		"elicitation-sep1034-client-defaults": runElicitationDefaults,
		"sse-retry":                           runSSERetry,
		"json-schema-ref-no-deref":            runListRaw,
		"json-schema-2020-12-preservation":    runSchemaPreservation,
		"sep-2322-client-request-state":       runMRTR,
		"http-standard-headers":               runStandardHeaders,
		"http-custom-headers":                 runCustomHeaders,
		"http-invalid-tool-headers":           runInvalidToolHeaders,
	}
	for _, s := range []string{
		"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
		"auth/authorization-server-migration", "auth/basic-cimd", "auth/iss-normalized",
		"auth/iss-not-advertised", "auth/iss-supported", "auth/iss-supported-missing",
		"auth/iss-unexpected", "auth/iss-wrong-issuer", "auth/metadata-default",
		"auth/metadata-issuer-mismatch", "auth/metadata-var1", "auth/metadata-var2",
		"auth/metadata-var3", "auth/offline-access-not-supported", "auth/offline-access-scope",
		"auth/pre-registration", "auth/resource-mismatch", "auth/scope-from-scopes-supported",
		"auth/scope-from-www-authenticate", "auth/scope-omitted-when-undefined",
		"auth/scope-retry-limit", "auth/scope-step-up", "auth/token-endpoint-auth-basic",
		"auth/token-endpoint-auth-none", "auth/token-endpoint-auth-post",
	} {
		m[s] = runAuth
	}
	return m
}

func main() {
	log.SetFlags(0)
	all := scenarios()
	if len(os.Args) != 2 {
		usage(all, "usage: %s SERVER_URL (scenario in MCP_CONFORMANCE_SCENARIO)", os.Args[0])
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	run, ok := all[name]
	if !ok {
		usage(all, "unknown scenario %q", name)
	}
	var cc map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cc); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, os.Args[1], cc); err != nil {
		log.Fatalf("scenario %q failed: %v", name, err)
	}
}

func usage(all map[string]scenario, format string, args ...any) {
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	log.Fatalf(format+"\nscenarios:\n  %s", append(args, strings.Join(names, "\n  "))...)
}

// open opens a toolset with the one server at serverURL; oauth, when set,
// authorizes it.
func open(ctx context.Context, serverURL string, oauth *upstream.Options) (*toolset.Toolset, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	prefix := ""
	srv := toolset.Server{
		Config: plugin.ServerConfig{Name: "conformance", Type: plugin.TransportStreamableHTTP, URL: serverURL},
		Prefix: &prefix,
	}
	if oauth != nil {
		srv.OAuth = upstream.Factory(oauth)
	}
	hosts := []string{"localhost", "127.0.0.1", "::1", u.Hostname()}
	return toolset.Open(ctx, []toolset.Server{srv}, &toolset.Options{AllowedHosts: hosts})
}

// tools lists the tool map and fails on any diagnostic (the server skipped).
func tools(ctx context.Context, ts *toolset.Toolset) ([]toolset.ToolInfo, error) {
	list, err := ts.Tools(ctx)
	if err != nil {
		return nil, err
	}
	if ds := ts.Diagnostics(); len(ds) > 0 {
		return nil, fmt.Errorf("%v", ds)
	}
	return list, nil
}

func call(ctx context.Context, ts *toolset.Toolset, name string, args map[string]any) error {
	res, err := ts.Call(ctx, name, args, toolset.CallInfo{})
	if err != nil {
		return fmt.Errorf("call %q: %w", name, err)
	}
	if res.IsError {
		log.Printf("call %q: error result", name)
	}
	return nil
}

func runInitialize(ctx context.Context, serverURL string, _ map[string]any) error {
	ts, err := open(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer ts.Close()
	_, err = tools(ctx, ts)
	return err
}

func runToolsCall(ctx context.Context, serverURL string, _ map[string]any) error {
	ts, err := open(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer ts.Close()
	list, err := tools(ctx, ts)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(list, func(t toolset.ToolInfo) bool { return t.Name == "add_numbers" }) {
		return errors.New(`tool "add_numbers" not found`)
	}
	return call(ctx, ts, "add_numbers", map[string]any{"a": 5, "b": 3})
}

func runSSERetry(ctx context.Context, serverURL string, _ map[string]any) error {
	ts, err := open(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer ts.Close()
	if _, err := tools(ctx, ts); err != nil {
		return err
	}
	return call(ctx, ts, "test_reconnection", map[string]any{})
}

// runAuth: the authorization through identity/upstream, then the listing
// and a call through the tool map.
func runAuth(ctx context.Context, serverURL string, cc map[string]any) error {
	opts := &upstream.Options{
		ClientIDMetadataURL: "https://conformance-test.local/client-metadata.json",
		Registration:        &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{redirect}},
		RedirectURL:         redirect,
		Fetch:               upstream.Walk(redirect),
	}
	id, _ := cc["client_id"].(string)
	secret, _ := cc["client_secret"].(string)
	if id != "" && secret != "" {
		opts.Client = &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}}
	}
	ts, err := open(ctx, serverURL, opts)
	if err != nil {
		return err
	}
	defer ts.Close()
	if _, err := tools(ctx, ts); err != nil {
		return err
	}
	_, err = ts.Call(ctx, "test-tool", map[string]any{}, toolset.CallInfo{})
	if err != nil {
		return fmt.Errorf("call test-tool: %w", err)
	}
	return nil
}
