package metrics

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/promtext"
)

// FuzzLabelValue writes any string as a label value (and as help text) and
// asserts that the output is valid text format, that the value stays on its
// own line without injecting labels or samples, and that it parses back to
// the same value (invalid UTF-8 bytes becoming U+FFFD one for one).
func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"", "ok", `a"b`, `a\b`, "a\nb", `\n`, "ü日本🙂", "\xff", "\r\x00", `x",y="1`, "} 1\n# TYPE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		want := string([]rune(v)) // each invalid byte becomes U+FFFD
		r := NewRegistry(nil)
		cv := r.NewCounterVec("c_total", v, "v", "w")
		cv.With(v, "tail").Inc()
		cv.With(v, "tail").Inc()
		r.NewGaugeVec("g", "h", "v").With(v).Set(1)
		out := expose(r)
		fams, err := promtext.Parse(out)
		if err != nil {
			t.Fatalf("does not parse: %v\n%q", err, out)
		}
		if len(fams) != 2 {
			t.Fatalf("%d families, want 2:\n%q", len(fams), out)
		}
		c := fams[0]
		if c.Name != "c_total" || c.Type != "counter" || len(c.Samples) != 1 {
			t.Fatalf("counter family %+v", c)
		}
		if v != "" && c.Help != want {
			t.Fatalf("help parsed back as %q, want %q", c.Help, want)
		}
		s := c.Samples[0]
		if len(s.Labels) != 2 || s.Labels[0].Name != "v" || s.Labels[1] != (promtext.Label{Name: "w", Value: "tail"}) || s.Value != 2 {
			t.Fatalf("sample %+v", s)
		}
		if s.Labels[0].Value != want {
			t.Fatalf("label value parsed back as %q, want %q", s.Labels[0].Value, want)
		}
		if got := strings.Count(out, "\n"); got != 6-boolInt(v == "") {
			t.Fatalf("%d lines, want the value to add none:\n%q", got, out)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
