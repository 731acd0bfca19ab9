package telemetry

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/promtext"
)

// FuzzLabelValue records any string as a label value (a server name) and
// asserts that the scrape is valid text format, that the value stays in
// its label without injecting labels, samples or lines, and that it parses
// back to the same value (invalid UTF-8 bytes becoming U+FFFD one for
// one).
func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"", "ok", `a"b`, `a\b`, "a\nb", `\n`, "ü日本🙂", "\xff", "\r\x00", `x",y="1`, "} 1\n# TYPE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		want := string([]rune(v)) // each invalid byte becomes U+FFFD
		ins := NewInstruments(nil, t.Context(), nil)
		ins.Metrics.DriftEvent(v, DriftRemoved)
		ins.Metrics.DriftEvent(v, DriftRemoved)
		w := httptest.NewRecorder()
		ins.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		out := w.Body.String()
		fams, err := promtext.Parse(out)
		if err != nil {
			t.Fatalf("does not parse: %v\n%q", err, out)
		}
		if len(fams) != 2 { // the drift counter and the sessions gauge
			t.Fatalf("%d families, want 2:\n%q", len(fams), out)
		}
		c := fams[0]
		if c.Name != "gatehouse_drift_events_total" || c.Type != "counter" || len(c.Samples) != 1 {
			t.Fatalf("counter family %+v", c)
		}
		s := c.Samples[0]
		if len(s.Labels) != 2 || s.Labels[0].Name != "server" || s.Labels[1] != (promtext.Label{Name: "kind", Value: DriftRemoved}) || s.Value != 2 {
			t.Fatalf("sample %+v", s)
		}
		if s.Labels[0].Value != want {
			t.Fatalf("label value parsed back as %q, want %q", s.Labels[0].Value, want)
		}
		if got := strings.Count(out, "\n"); got != 6 {
			t.Fatalf("%d lines, want the value to add none:\n%q", got, out)
		}
	})
}
