package bearer

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestMetadataURLAndPaths(t *testing.T) {
	for resource, want := range map[string]string{
		"https://gw.example.com/mcp":  "https://gw.example.com/.well-known/oauth-protected-resource/mcp",
		"https://gw.example.com/":     "https://gw.example.com/.well-known/oauth-protected-resource",
		"https://gw.example.com/a/b/": "https://gw.example.com/.well-known/oauth-protected-resource/a/b",
		"http://127.0.0.1:8080/x%20y": "http://127.0.0.1:8080/.well-known/oauth-protected-resource/x%20y",
		"::not a url":                 "",
	} {
		if got := MetadataURL(resource); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", resource, got, want)
		}
	}
	if got := MetadataPaths("https://gw.example.com/api/mcp"); !slices.Equal(got, []string{WellKnownProtectedResource, WellKnownProtectedResource + "/mcp", WellKnownProtectedResource + "/api/mcp"}) {
		t.Errorf("paths: %v", got)
	}
	if got := MetadataPaths("https://gw.example.com/mcp"); len(got) != 2 {
		t.Errorf("the /mcp path twice: %v", got)
	}
	if got := MetadataPaths("http://127.0.0.1:8080/x%20y"); len(got) != 2 {
		t.Errorf("an escaped path became a mux pattern: %v", got)
	}
}

// TestChallenges: only a request the verifier marked gets the
// insufficient_scope challenge or the 503; others pass unchanged.
func TestChallenges(t *testing.T) {
	const insufficient = `Bearer error="insufficient_scope", scope="mcp"`
	for _, tc := range []struct {
		mark       func(*State)
		status     int
		wantStatus int
		wantHeader string
	}{
		{nil, http.StatusForbidden, http.StatusForbidden, ""},
		{func(s *State) { s.Insufficient = true }, http.StatusForbidden, http.StatusForbidden, insufficient},
		{func(s *State) { s.Unavailable = true }, http.StatusInternalServerError, http.StatusServiceUnavailable, ""},
		{nil, http.StatusInternalServerError, http.StatusInternalServerError, ""},
		{func(s *State) { s.Insufficient = true }, http.StatusOK, http.StatusOK, ""},
	} {
		h := Challenges(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.mark != nil {
				Mark(r, tc.mark)
			}
			w.WriteHeader(tc.status)
		}), insufficient)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", nil))
		if rec.Code != tc.wantStatus || rec.Header().Get("WWW-Authenticate") != tc.wantHeader {
			t.Errorf("status %d: got %d %q, want %d %q", tc.status, rec.Code, rec.Header().Get("WWW-Authenticate"), tc.wantStatus, tc.wantHeader)
		}
		if tc.wantStatus == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
			t.Error("a 503 without Retry-After")
		}
	}
	Mark(httptest.NewRequest("GET", "/", nil), func(*State) { t.Error("Mark ran outside Challenges") })
}
