package server

import "testing"

// TestFrontServesAClient: a go-sdk client's session (initialize, calls,
// the end) is served by the front, with the effects counted once each.
func TestFrontServesAClient(t *testing.T) {
	eff := &effects{}
	s, err := New(Options{Tools: testTools(eff, nil), Identify: identify, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	url, _, hs := serveLimited(t, s, nil)
	cs := connect(t, url, "tok-alice")
	for i := range 20 {
		res := callTool(t, cs, "charge", map[string]any{"account": "a", "amount": i}, nil)
		if got := structured(t, res)["subject"]; got != "alice" {
			t.Fatalf("call %d: subject %v", i, got)
		}
	}
	if n := eff.total(); n != 20 {
		t.Errorf("%d effects, want 20", n)
	}
	if n := hs.front.Served(); n < 22 { // initialize, initialized, 20 calls
		t.Errorf("the front served %d requests, want at least 22", n)
	}
}
