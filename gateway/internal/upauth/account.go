package upauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxAccountDoc bounds the OpenID metadata and userinfo bodies read for
// the upstream account.
const maxAccountDoc = 1 << 20

// userinfoAccount is the upstream account of a connection whose token
// response carried no ID token that verified: the sub of the
// authorization server's userinfo endpoint, asked with the access token
// just obtained, when its OpenID metadata (issuer + /.well-known/openid-
// configuration, whose issuer must be the issuer) lists one; issuer#sub,
// else empty. Every URL is fetched as the connect flow fetches what it
// learns from an upstream (learntClient, checkLearnt). What is verified:
// the metadata's issuer, and that the answer is a JSON object with a
// non-empty string sub; the answer is the endpoint's word over the
// guarded connection (it is not signed).
func (m *Manager) userinfoAccount(ctx context.Context, s *Server, issuer, accessToken string) (string, error) {
	if issuer == "" || accessToken == "" {
		return "", nil
	}
	mu := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	body, err := m.getLearnt(ctx, s, "OpenID metadata", mu, "")
	if err != nil {
		return "", err
	}
	var meta struct {
		Issuer   string `json:"issuer"`
		Userinfo string `json:"userinfo_endpoint"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return "", fmt.Errorf("OpenID metadata %s does not read: %w", mu, err)
	}
	if meta.Issuer != issuer {
		return "", fmt.Errorf("OpenID metadata %s names another issuer", mu)
	}
	if meta.Userinfo == "" {
		return "", nil
	}
	if err := m.checkLearnt(s, meta.Userinfo); err != nil {
		return "", fmt.Errorf("userinfo endpoint: %w", err)
	}
	body, err = m.getLearnt(ctx, s, "userinfo endpoint", meta.Userinfo, accessToken)
	if err != nil {
		return "", err
	}
	sub, err := parseUserinfo(body)
	if err != nil {
		return "", err
	}
	return issuer + "#" + sub, nil
}

// getLearnt GETs raw (an URL learnt from s's authorization server) with
// bearer when set, and returns a 200's body (at most maxAccountDoc bytes).
func (m *Manager) getLearnt(ctx context.Context, s *Server, what, raw, bearer string) ([]byte, error) {
	hc, err := m.learntClient(what, s, raw)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", what, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAccountDoc+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(b) > maxAccountDoc {
		return nil, fmt.Errorf("%s answered more than %d bytes", what, maxAccountDoc)
	}
	return b, nil
}

// parseUserinfo reads the sub of a userinfo answer (OpenID Connect Core
// 5.3.2): a JSON object whose sub is a non-empty string without control
// characters, at most 255 bytes (5.1: "MUST NOT exceed 255 ASCII
// characters").
func parseUserinfo(body []byte) (string, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(body, &all); err != nil || all == nil {
		return "", errors.New("the userinfo answer is not a JSON object")
	}
	raw, ok := all["sub"]
	if !ok {
		return "", errors.New("the userinfo answer has no sub")
	}
	var sub string
	if err := json.Unmarshal(raw, &sub); err != nil {
		return "", errors.New("the userinfo answer's sub is not a string")
	}
	switch {
	case sub == "":
		return "", errors.New("the userinfo answer's sub is empty")
	case len(sub) > 255:
		return "", errors.New("the userinfo answer's sub is longer than 255 bytes")
	case strings.ContainsFunc(sub, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", errors.New("the userinfo answer's sub has a control character")
	}
	return sub, nil
}
