package metrics

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/promtext"
	"go.uber.org/goleak"
)

func expose(r *Registry) string {
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		panic(err)
	}
	return b.String()
}

func TestGoldenExposition(t *testing.T) {
	r := NewRegistry(nil)
	r.NewCounter("app_requests_total", "Requests served.").Add(3)
	cv := r.NewCounterVec("app_errors_total", "Errors by code.\nSecond line: a \\ backslash and \"quotes\".", "code", "path")
	cv.With("500", "/b").Inc()
	cv.With("404", "/a").Add(2)
	cv.With("404", "/a\"q\"\n\\").Inc()
	cv.With("404", "/frac").Add(0.5)
	r.NewGauge("app_temperature", "Temperature.").Set(-1.5)
	r.NewGaugeFunc("app_uptime_seconds", "", func() float64 { return 42 })
	h := r.NewHistogram("app_latency_seconds", "Latency.", []float64{0.125, 1})
	for _, v := range []float64{0.0625, 0.125, 0.5, 3} {
		h.Observe(v)
	}
	r.NewGaugeVec("app_up", "Up.", "server") // no series yet
	hv := r.NewHistogramVec("app_size_bytes", "Sizes.", []float64{10, math.Inf(+1)}, "kind")
	hv.With("b").Observe(11)
	hv.With("a").Observe(10)

	want := `# HELP app_errors_total Errors by code.\nSecond line: a \\ backslash and "quotes".
# TYPE app_errors_total counter
app_errors_total{code="404",path="/a"} 2
app_errors_total{code="404",path="/a\"q\"\n\\"} 1
app_errors_total{code="404",path="/frac"} 0.5
app_errors_total{code="500",path="/b"} 1
# HELP app_latency_seconds Latency.
# TYPE app_latency_seconds histogram
app_latency_seconds_bucket{le="0.125"} 2
app_latency_seconds_bucket{le="1"} 3
app_latency_seconds_bucket{le="+Inf"} 4
app_latency_seconds_sum 3.6875
app_latency_seconds_count 4
# HELP app_requests_total Requests served.
# TYPE app_requests_total counter
app_requests_total 3
# HELP app_size_bytes Sizes.
# TYPE app_size_bytes histogram
app_size_bytes_bucket{kind="a",le="10"} 1
app_size_bytes_bucket{kind="a",le="+Inf"} 1
app_size_bytes_sum{kind="a"} 10
app_size_bytes_count{kind="a"} 1
app_size_bytes_bucket{kind="b",le="10"} 0
app_size_bytes_bucket{kind="b",le="+Inf"} 1
app_size_bytes_sum{kind="b"} 11
app_size_bytes_count{kind="b"} 1
# HELP app_temperature Temperature.
# TYPE app_temperature gauge
app_temperature -1.5
# HELP app_up Up.
# TYPE app_up gauge
# TYPE app_uptime_seconds gauge
app_uptime_seconds 42
`
	got := expose(r)
	if got != want {
		t.Fatalf("exposition differs\n--- got\n%s\n--- want\n%s", got, want)
	}
	promtext.MustParse(t, got)
	if again := expose(r); again != got {
		t.Fatalf("second scrape differs:\n%s", again)
	}
}

func TestHostileLabelValues(t *testing.T) {
	cases := []struct{ in, escaped, parsed string }{
		{`a"b`, `a\"b`, `a"b`},
		{`a\b`, `a\\b`, `a\b`},
		{"a\nb", `a\nb`, "a\nb"},
		{`\"`, `\\\"`, `\"`},
		{`\n`, `\\n`, `\n`},
		{`"} 1` + "\nx 2", `\"} 1\nx 2`, `"} 1` + "\nx 2"},
		{`x",evil="1`, `x\",evil=\"1`, `x",evil="1`},
		{"ü日本🙂", "ü日本🙂", "ü日本🙂"},
		{"\r\t\x00", "\r\t\x00", "\r\t\x00"},
		{"\xff", "\uFFFD", "\uFFFD"},
		{"a\xc3", "a\uFFFD", "a\uFFFD"},                              // truncated two-byte sequence
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD"}, // UTF-16 surrogate
		{"", "", ""},
		{"# HELP x y", "# HELP x y", "# HELP x y"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.in), func(t *testing.T) {
			r := NewRegistry(nil)
			r.NewCounterVec("c_total", "h", "v", "w").With(c.in, "z").Inc()
			out := expose(r)
			wantLine := `c_total{v="` + c.escaped + `",w="z"} 1` + "\n"
			if !strings.HasSuffix(out, wantLine) {
				t.Fatalf("got\n%q\nwant suffix\n%q", out, wantLine)
			}
			fams := promtext.MustParse(t, out)
			if n := len(fams[0].Samples); n != 1 {
				t.Fatalf("%d samples, want 1 (a value broke out of its line)", n)
			}
			s := fams[0].Samples[0]
			if v, _ := s.Label("v"); v != c.parsed {
				t.Fatalf("parsed back %q, want %q", v, c.parsed)
			}
			if w, _ := s.Label("w"); w != "z" || len(s.Labels) != 2 {
				t.Fatalf("labels %+v: a value injected a label", s.Labels)
			}
		})
	}
}

func TestHostileHelp(t *testing.T) {
	r := NewRegistry(nil)
	r.NewGauge("g", "line1\n# TYPE g counter\nback\\slash \"q\" \xff")
	out := expose(r)
	want := `# HELP g line1\n# TYPE g counter\nback\\slash "q" ` + "\uFFFD\n# TYPE g gauge\ng 0\n"
	if out != want {
		t.Fatalf("got %q\nwant %q", out, want)
	}
	fams := promtext.MustParse(t, out)
	if fams[0].Type != "gauge" || fams[0].Help != "line1\n# TYPE g counter\nback\\slash \"q\" \uFFFD" {
		t.Fatalf("parsed %+v", fams[0])
	}
}

// Label values that differ only in invalid UTF-8 become the same value on
// the wire; they must share one series, not print two identical ones.
func TestInvalidUTF8ValuesShareASeries(t *testing.T) {
	r := NewRegistry(nil)
	cv := r.NewCounterVec("c_total", "h", "v")
	cv.With("\xff").Inc()
	cv.With("\xfe").Inc()
	cv.With("\uFFFD").Inc()
	cv.With("\xff").Inc()
	fams := promtext.MustParse(t, expose(r))
	if n := len(fams[0].Samples); n != 1 {
		t.Fatalf("%d series, want 1:\n%s", n, expose(r))
	}
	if v, _ := promtext.Find(fams, "c_total", "v", "\uFFFD"); v != 4 {
		t.Fatalf("count %v, want 4", v)
	}
	if !cv.Delete("\xfe") || cv.Delete("\xff") {
		t.Fatal("Delete of a sanitized-equal value: want true, then false")
	}
	if n := len(promtext.MustParse(t, expose(r))[0].Samples); n != 0 {
		t.Fatalf("%d series after Delete", n)
	}
	cv.With("\xff").Inc() // the alias is gone too: a fresh series
	if v, _ := promtext.Find(promtext.MustParse(t, expose(r)), "c_total", "v", "\uFFFD"); v != 1 {
		t.Fatalf("after re-create: %v, want 1", v)
	}
}

func TestConcurrentExactTotals(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := NewRegistry(nil)
	c := r.NewCounter("c_total", "h")
	cv := r.NewCounterVec("cv_total", "h", "tool", "outcome")
	g := r.NewGauge("g", "h")
	hv := r.NewHistogramVec("h_seconds", "h", []float64{0.5, 1.5}, "tool")
	fc := r.NewCounter("f_total", "h")
	many := r.NewCounterVec("many_total", "h", "k") // series created concurrently
	const workers, n = 50, 1000
	keys := make([]string, workers*20)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	scrapes := make(chan int, 1)
	go func() { // scrape while writers run; every scrape must parse
		k := 0
		for {
			select {
			case <-stop:
				scrapes <- k
				return
			default:
			}
			if _, err := promtext.Parse(expose(r)); err != nil {
				t.Error(err)
				scrapes <- k
				return
			}
			k++
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := cv.With(fmt.Sprintf("tool%d", w%5), "ok") // pre-resolved
			for i := range n {
				c.Inc()
				own.Inc()
				cv.With("shared", []string{"ok", "denied"}[i%2]).Inc()
				g.Inc()
				g.Dec()
				g.Add(1)
				hv.With([]string{"a", "b"}[w%2]).Observe(float64(i % 3)) // 0, 1, 2
				fc.Add(0.25)
				many.With(keys[w*20+i%20]).Inc()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-scrapes
	fams := promtext.MustParse(t, expose(r))
	check := func(want float64, name string, kv ...string) {
		t.Helper()
		if v, ok := promtext.Find(fams, name, kv...); !ok || v != want {
			t.Errorf("%s%v = %v (found %v), want %v", name, kv, v, ok, want)
		}
	}
	check(workers*n, "c_total")
	check(workers*n*0.25, "f_total")
	check(workers*n, "g")
	for i := range 5 {
		check(workers/5*n, "cv_total", "tool", fmt.Sprint("tool", i), "outcome", "ok")
	}
	for _, k := range keys {
		check(n/20, "many_total", "k", k)
	}
	check(workers*n/2, "cv_total", "tool", "shared", "outcome", "ok")
	check(workers*n/2, "cv_total", "tool", "shared", "outcome", "denied")
	// Per tool: 25 workers x 1000 observations of 0,1,2,0,1,2,...
	// (334 zeros, 333 ones, 333 twos per worker).
	for _, tool := range []string{"a", "b"} {
		check(25*334, "h_seconds_bucket", "tool", tool, "le", "0.5")
		check(25*(334+333), "h_seconds_bucket", "tool", tool, "le", "1.5")
		check(25*n, "h_seconds_bucket", "tool", tool, "le", "+Inf")
		check(25*n, "h_seconds_count", "tool", tool)
		check(25*(333+2*333), "h_seconds_sum", "tool", tool)
	}
}

func TestHistogramBuckets(t *testing.T) {
	bounds := []float64{-1, 0, 0.001, 1, 2.5}
	obs := []float64{-5, -1, -0.5, 0, 0, 1e-9, 0.001, 0.0010000001, 1, 2.4999, 2.5, 2.5000001, 100,
		math.Inf(+1), math.Inf(-1), math.NaN()}
	r := NewRegistry(nil)
	h := r.NewHistogram("h", "h", bounds)
	var sum float64
	n := 0
	for _, v := range obs {
		h.Observe(v)
		if !math.IsNaN(v) {
			n++
			if !math.IsInf(v, 0) {
				sum += v
			}
		}
	}
	fams := promtext.MustParse(t, expose(r))
	// Reference: a bucket counts the observations <= its bound.
	for _, b := range append(bounds, math.Inf(+1)) {
		want := 0
		for _, v := range obs {
			if v <= b { // NaN compares false: excluded
				want++
			}
		}
		le := string(appendFloat(nil, b))
		if got, ok := promtext.Find(fams, "h_bucket", "le", le); !ok || got != float64(want) {
			t.Errorf("bucket le=%s: %v, want %d", le, got, want)
		}
	}
	if got, _ := promtext.Find(fams, "h_count"); got != float64(n) {
		t.Errorf("count %v, want %d (NaN ignored)", got, n)
	}
	// +Inf and -Inf were both observed: the sum is NaN, as Prometheus does.
	if got, _ := promtext.Find(fams, "h_sum"); !math.IsNaN(got) {
		t.Errorf("sum %v, want NaN after +Inf and -Inf", got)
	}

	r2 := NewRegistry(nil)
	h2 := r2.NewHistogram("d_seconds", "h", nil)
	h2.ObserveDuration(150e3)   // 150 µs
	h2.ObserveDuration(1e9)     // 1 s, on a bound
	h2.ObserveDuration(30e9)    // 30 s
	h2.Observe(sum - sum + 0.1) // 0.1, on a bound
	fams = promtext.MustParse(t, expose(r2))
	wantCum := map[string]float64{"0.0001": 0, "0.00025": 1, "0.1": 2, "0.5": 2, "1": 3, "10": 3, "+Inf": 4}
	for le, want := range wantCum {
		if got, _ := promtext.Find(fams, "d_seconds_bucket", "le", le); got != want {
			t.Errorf("default buckets le=%s: %v, want %v", le, got, want)
		}
	}
	if got := len(fams[0].Samples); got != 17+2 {
		t.Errorf("%d samples, want 16 buckets + +Inf + sum + count", got)
	}
	if got, _ := promtext.Find(fams, "d_seconds_sum"); math.Abs(got-31.10015) > 1e-9 {
		t.Errorf("sum %v, want 31.10015", got)
	}
}

func TestDefaultLatencyBucketsIsACopy(t *testing.T) {
	b := DefaultLatencyBuckets()
	b[0] = 99
	if DefaultLatencyBuckets()[0] != 0.0001 {
		t.Fatal("DefaultLatencyBuckets shares its slice")
	}
}

// registerSet registers a set of families of every kind, as a component
// registers its metrics at start-up.
func registerSet(r *Registry) {
	r.NewCounterVec("set_calls_total", "Calls.", "tool", "outcome").With("t", "ok").Inc()
	r.NewHistogramVec("set_call_duration_seconds", "Call time.", nil, "tool").With("t").Observe(0.001)
	r.NewGaugeVec("set_up", "Up.", "server").With("s").Set(1)
	r.NewCounterVec("set_events_total", "Events.", "server", "kind")
	r.NewGauge("set_sessions", "Sessions.").Inc()
	r.NewGaugeFuncOptional("set_pending", "Pending.", gaugeUnknown)
	r.NewGaugeFuncOptional("set_lag_seconds", "Lag.", func() (float64, bool) { return 1.5, true })
}

// gaugeUnknown is an optional gauge function without a value.
func gaugeUnknown() (float64, bool) { return 0, false }

func TestRegistrationPanics(t *testing.T) {
	cases := map[string]func(r *Registry){
		"empty name":               func(r *Registry) { r.NewCounter("", "h") },
		"name with dash":           func(r *Registry) { r.NewCounter("a-b", "h") },
		"name with digit first":    func(r *Registry) { r.NewGauge("1a", "h") },
		"name with unicode":        func(r *Registry) { r.NewGauge("naïve", "h") },
		"label with dash":          func(r *Registry) { r.NewCounterVec("a", "h", "x-y") },
		"label with colon":         func(r *Registry) { r.NewCounterVec("a", "h", "x:y") },
		"label reserved":           func(r *Registry) { r.NewGaugeVec("a", "h", "__name") },
		"label empty":              func(r *Registry) { r.NewGaugeVec("a", "h", "") },
		"label duplicate":          func(r *Registry) { r.NewCounterVec("a", "h", "x", "x") },
		"histogram le label":       func(r *Registry) { r.NewHistogramVec("a", "h", nil, "le") },
		"buckets unsorted":         func(r *Registry) { r.NewHistogram("a", "h", []float64{1, 0.5}) },
		"buckets equal":            func(r *Registry) { r.NewHistogram("a", "h", []float64{1, 1}) },
		"bucket NaN":               func(r *Registry) { r.NewHistogram("a", "h", []float64{math.NaN()}) },
		"bucket -Inf":              func(r *Registry) { r.NewHistogram("a", "h", []float64{math.Inf(-1), 1}) },
		"bucket +Inf not last":     func(r *Registry) { r.NewHistogram("a", "h", []float64{math.Inf(1), math.Inf(1)}) },
		"nil gauge func":           func(r *Registry) { r.NewGaugeFunc("a", "h", nil) },
		"duplicate name":           func(r *Registry) { r.NewCounter("a", "h"); r.NewGauge("a", "h") },
		"collides with _count":     func(r *Registry) { r.NewHistogram("a", "h", nil); r.NewCounter("a_count", "h") },
		"collides with _bucket":    func(r *Registry) { r.NewCounter("a_bucket", "h"); r.NewHistogram("a", "h", nil) },
		"histogram _sum clash":     func(r *Registry) { r.NewHistogram("a", "h", nil); r.NewHistogram("a_sum", "h", nil) },
		"too few label values":     func(r *Registry) { r.NewCounterVec("a", "h", "x", "y").With("1") },
		"too many label values":    func(r *Registry) { r.NewGaugeVec("a", "h", "x").With("1", "2") },
		"delete wrong arity":       func(r *Registry) { r.NewHistogramVec("a", "h", nil, "x").Delete() },
		"negative counter add":     func(r *Registry) { r.NewCounter("a", "h").Add(-1) },
		"NaN counter add":          func(r *Registry) { r.NewCounter("a", "h").Add(math.NaN()) },
		"nil optional gauge func":  func(r *Registry) { r.NewGaugeFuncOptional("a", "h", nil) },
		"optional gauge func dup":  func(r *Registry) { r.NewGauge("a", "h"); r.NewGaugeFuncOptional("a", "h", gaugeUnknown) },
		"registerSet called twice": func(r *Registry) { registerSet(r); registerSet(r) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry(nil)
			defer func() {
				p := recover()
				if p == nil {
					t.Fatal("no panic")
				}
				if s, _ := p.(string); !strings.HasPrefix(s, "metrics: ") {
					t.Fatalf("panic %v does not name the package", p)
				}
				// The registry stays usable and valid after the panic.
				promtext.MustParse(t, expose(r))
			}()
			f(r)
		})
	}
	// The valid edge cases register.
	r := NewRegistry(nil)
	r.NewCounterVec("a:b_c", "h", "_x", "y1")
	r.NewHistogram("h", "h", []float64{})                     // only +Inf
	r.NewHistogram("h2", "h", []float64{-1, 0, math.Inf(1)})  // trailing +Inf allowed
	r.NewHistogramVec("h3", "h", []float64{1}, "lee", "tool") // "lee" is not "le"
	promtext.MustParse(t, expose(r))
}

// A hostile caller spraying distinct values (if a free-text value ever
// reached a label) cannot grow a vector without bound.
func TestCardinalityCap(t *testing.T) {
	r := NewRegistry(&RegistryOptions{MaxSeriesPerVec: 100})
	cv := r.NewCounterVec("c_total", "h", "tool", "outcome")
	hv := r.NewHistogramVec("h_seconds", "h", nil, "tool")
	for i := range 10000 {
		tool := fmt.Sprintf("attacker-%d\xff", i)
		cv.With(tool, "ok").Inc()
		hv.With(tool).Observe(0.001)
	}
	fams := promtext.MustParse(t, expose(r))
	for _, f := range fams {
		var series, total float64
		for _, s := range f.Samples {
			switch s.Name {
			case "c_total", "h_seconds_count":
				series++
				total += s.Value
			}
		}
		if series != 101 {
			t.Errorf("%s: %v series, want 100 + overflow", f.Name, series)
		}
		if total != 10000 {
			t.Errorf("%s: total %v, want every call counted (10000)", f.Name, total)
		}
	}
	if v, _ := promtext.Find(fams, "c_total", "tool", OverflowLabelValue, "outcome", OverflowLabelValue); v != 9900 {
		t.Errorf("overflow series %v, want 9900", v)
	}
	// An existing series is still found, not overflowed.
	cv.With("attacker-5\xff", "ok").Inc()
	if v, _ := promtext.Find(promtext.MustParse(t, expose(r)), "c_total", "tool", "attacker-5\uFFFD", "outcome", "ok"); v != 2 {
		t.Errorf("existing series: %v, want 2", v)
	}
	// A legitimate value equal to the overflow marker shares the series
	// rather than printing a duplicate.
	r2 := NewRegistry(&RegistryOptions{MaxSeriesPerVec: 1})
	gv := r2.NewGaugeVec("g", "h", "v")
	gv.With(OverflowLabelValue).Set(1)
	gv.With("x").Add(1)
	fams = promtext.MustParse(t, expose(r2))
	if v, _ := promtext.Find(fams, "g", "v", OverflowLabelValue); v != 2 || len(fams[0].Samples) != 1 {
		t.Errorf("overflow marker collision: %+v", fams[0].Samples)
	}
}

func TestGaugeAndDelete(t *testing.T) {
	r := NewRegistry(nil)
	gv := r.NewGaugeVec("g", "h", "server")
	a := gv.With("a")
	a.Set(5)
	a.Sub(1.5)
	a.Add(-0.5)
	gv.With("b").Set(math.Inf(-1))
	gv.With("c").Set(math.NaN())
	gv.With("d").Set(1e21)
	out := expose(r)
	want := "# HELP g h\n# TYPE g gauge\ng{server=\"a\"} 3\ng{server=\"b\"} -Inf\ng{server=\"c\"} NaN\ng{server=\"d\"} 1e+21\n"
	if out != want {
		t.Fatalf("got %q\nwant %q", out, want)
	}
	promtext.MustParse(t, out)
	if !gv.Delete("b") || gv.Delete("b") || gv.Delete("zz") {
		t.Fatal("Delete: want true, false, false")
	}
	if strings.Contains(expose(r), `"b"`) {
		t.Fatal("deleted series still exported")
	}
	a.Inc() // a kept handle of a live series still counts
	if v, _ := promtext.Find(promtext.MustParse(t, expose(r)), "g", "server", "a"); v != 4 {
		t.Fatalf("a = %v, want 4", v)
	}
}

func TestCounterValues(t *testing.T) {
	r := NewRegistry(nil)
	c := r.NewCounter("c_total", "h")
	c.Add(0)
	c.Add(1 << 60) // whole but beyond float precision: still exact
	c.Inc()
	if out := expose(r); !strings.HasSuffix(out, "\nc_total 1152921504606846977\n") {
		t.Fatalf("large whole counter not exact: %q", out)
	}
	c2 := r.NewCounter("d_total", "h")
	c2.Add(0.1)
	c2.Add(0.2)
	if x, y := 0.1, 0.2; c2.Value() != x+y {
		t.Fatalf("Value %v", c2.Value())
	}
	if out := expose(r); !strings.Contains(out, "\nd_total 0.30000000000000004\n") {
		t.Fatalf("fractional counter: %q", out)
	}
	c2.Add(math.Inf(1))
	if out := expose(r); !strings.Contains(out, "\nd_total +Inf\n") {
		t.Fatalf("infinite counter: %q", out)
	}
	promtext.MustParse(t, expose(r))
}

func TestEmptyRegistry(t *testing.T) {
	if out := expose(NewRegistry(nil)); out != "" {
		t.Fatalf("empty registry wrote %q", out)
	}
}

// White-box: a series created after the read map was built is served from
// the dirty map, then promoted once lookups have paid for the copy, and
// every lookup returns the same handle throughout.
func TestVecPromotion(t *testing.T) {
	r := NewRegistry(nil)
	cv := r.NewCounterVec("c_total", "h", "k")
	first := map[string]*Counter{}
	for i := range 100 {
		k := fmt.Sprint(i)
		first[k] = cv.With(k)
	}
	v := cv.v
	if got := len(*v.read.Load()) + len(v.dirty); got != 100 {
		t.Fatalf("%d keys, want 100", got)
	}
	if len(*v.read.Load()) < 64 {
		t.Fatalf("bulk creation left only %d of 100 keys in the read map", len(*v.read.Load()))
	}
	late := cv.With("late")
	bound := len(v.dirty) + len(*v.read.Load())/8 + 1
	if _, ok := v.dirty[string(appendKey(nil, []string{"late"}))]; !ok {
		t.Fatalf("new series not in the dirty map")
	}
	for i := 0; ; i++ {
		if cv.With("late") != late {
			t.Fatal("lookup returned another handle")
		}
		if _, ok := (*v.read.Load())[string(appendKey(nil, []string{"late"}))]; ok {
			if i > bound {
				t.Fatalf("promoted after %d lookups, want at most %d", i, bound)
			}
			break
		}
		if i > 1000 {
			t.Fatal("never promoted")
		}
	}
	for k, c := range first {
		if cv.With(k) != c {
			t.Fatalf("handle of %s changed across promotions", k)
		}
	}
	if !cv.Delete("5") || cv.Delete("5") {
		t.Fatal("Delete")
	}
	if cv.With("5") == first["5"] {
		t.Fatal("deleted series came back with its old handle")
	}
	if n := len(promtext.MustParse(t, expose(r))[0].Samples); n != 101 {
		t.Fatalf("%d series, want 101", n)
	}
}

// An optional function gauge is read on every scrape; while it has no
// value its family has only its HELP and TYPE lines, and the exposition
// stays valid.
func TestGaugeFuncOptional(t *testing.T) {
	r := NewRegistry(nil)
	var v atomic.Uint64
	var ok atomic.Bool
	r.NewGaugeFuncOptional("a_pending", "Pending.", func() (float64, bool) { return math.Float64frombits(v.Load()), ok.Load() })
	r.NewGaugeFuncOptional("b_untyped", "", gaugeUnknown)
	r.NewGauge("c", "h")
	scrape := func(want string) {
		t.Helper()
		out := expose(r)
		if out != want {
			t.Fatalf("got %q\nwant %q", out, want)
		}
		promtext.MustParse(t, out)
	}
	const rest = "# TYPE b_untyped gauge\n# HELP c h\n# TYPE c gauge\nc 0\n"
	scrape("# HELP a_pending Pending.\n# TYPE a_pending gauge\n" + rest)
	v.Store(math.Float64bits(7))
	scrape("# HELP a_pending Pending.\n# TYPE a_pending gauge\n" + rest)
	ok.Store(true)
	scrape("# HELP a_pending Pending.\n# TYPE a_pending gauge\na_pending 7\n" + rest)
	v.Store(math.Float64bits(0))
	scrape("# HELP a_pending Pending.\n# TYPE a_pending gauge\na_pending 0\n" + rest)
	ok.Store(false)
	scrape("# HELP a_pending Pending.\n# TYPE a_pending gauge\n" + rest)
	if _, found := promtext.Find(promtext.MustParse(t, expose(r)), "a_pending"); found {
		t.Fatal("sample present while ok is false")
	}
}
