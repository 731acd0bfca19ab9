package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// getReadyz GETs url with token ("" for none).
func getReadyz(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestReadyzDetailNeedsAToken: /readyz without a valid token says ready or
// not and nothing more (no server name, no plugin directory); a token
// holder and the metrics listener get the detail.
func TestReadyzDetailNeedsAToken(t *testing.T) {
	up := newRawUpstream(t)
	g, mcpURL := rawGateway(t, up, "plugins: [./secret-plugin-dir]\n")
	url := strings.TrimSuffix(mcpURL, "/mcp") + "/readyz"
	for _, tok := range []string{"", "not-a-token", "alice-token-"} {
		status, body := getReadyz(t, url, tok)
		if status != http.StatusOK || body != "{\"ready\":true}\n" {
			t.Errorf("token %q: %d %q, want 200 {\"ready\":true} alone", tok, status, body)
		}
	}
	status, body := getReadyz(t, url, "bob-token")
	if status != http.StatusOK || !strings.Contains(body, `"name":"up"`) || !strings.Contains(body, "secret-plugin-dir") {
		t.Errorf("with a token: %d %s, want the servers and plugins", status, body)
	}
	ms := httptest.NewServer(g.MetricsHandler())
	defer ms.Close()
	status, body = getReadyz(t, ms.URL+"/readyz", "")
	if status != http.StatusOK || !strings.Contains(body, `"name":"up"`) || !strings.Contains(body, "secret-plugin-dir") {
		t.Errorf("metrics listener: %d %s, want the detail", status, body)
	}
	if status, _ := getReadyz(t, ms.URL+"/metrics", ""); status != http.StatusOK {
		t.Errorf("metrics listener /metrics: %d", status)
	}
}
