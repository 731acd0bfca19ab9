package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestReportMedians: -report -medians takes the median of each figure over
// the rounds of a label and cell, and the ratio of the medians to the first
// and the second label's in the same cell.
func TestReportMedians(t *testing.T) {
	lines := []string{
		// round 1
		`{"label":"direct","mode":"load","sessions":1,"payload_bytes":64,"calls":2000,"calls_per_sec":2000,"p50_ms":0.4,"p99_ms":1,"target_cpu_ms_per_call":0.05}`,
		`{"label":"plain","mode":"load","sessions":1,"payload_bytes":64,"calls":1400,"calls_per_sec":1400,"p50_ms":0.6,"p99_ms":2,"target_cpu_ms_per_call":0.1}`,
		`{"label":"keyed","mode":"load","sessions":1,"payload_bytes":64,"calls":1000,"calls_per_sec":1000,"p50_ms":0.9,"p99_ms":3,"target_cpu_ms_per_call":0.2,"keys":"pool:4","repeats":500,"errors":1}`,
		// round 2: one outlier each, which the median ignores
		`{"label":"direct","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":9999,"p50_ms":0.1,"p99_ms":0.1,"target_cpu_ms_per_call":0.01}`,
		`{"label":"plain","mode":"load","sessions":1,"payload_bytes":64,"calls":1600,"calls_per_sec":1600,"p50_ms":0.6,"p99_ms":2,"target_cpu_ms_per_call":0.1}`,
		`{"label":"keyed","mode":"load","sessions":1,"payload_bytes":64,"calls":1000,"calls_per_sec":1100,"p50_ms":0.9,"p99_ms":3,"target_cpu_ms_per_call":0.2,"keys":"pool:4","repeats":500}`,
		// round 3
		`{"label":"direct","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":2000,"p50_ms":0.4,"p99_ms":1,"target_cpu_ms_per_call":0.05}`,
		`{"label":"plain","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":100,"p50_ms":9,"p99_ms":20,"target_cpu_ms_per_call":0.1}`,
		`{"label":"keyed","mode":"load","sessions":1,"payload_bytes":64,"calls":1000,"calls_per_sec":1200,"p50_ms":0.9,"p99_ms":3,"target_cpu_ms_per_call":0.2,"keys":"pool:4"}`,
		`{"label":"direct","mode":"load","sessions":8,"payload_bytes":64,"calls_per_sec":3000,"p50_ms":2,"p99_ms":5,"target_cpu_ms_per_call":0.04}`,
		`{"label":"direct","mode":"idle","sessions":10,"connections":10}`,
	}
	out := reportMedians(t, lines)
	for _, want := range []string{
		"| configuration | sessions | payload | calls/s | p50 ms | p99 ms | CPU µs/call | vs direct | vs plain | rounds | errors |",
		"| direct | 1 | 64 B | 2000 | 0.400 | 1.000 | 50 | 1.00× | 1.43× | 3 | 0 |",
		"| plain | 1 | 64 B | 1400 | 0.600 | 2.000 | 100 | 0.70× | 1.00× | 3 | 0 |",
		"| keyed (keys pool:4, 33% repeats) | 1 | 64 B | 1100 | 0.900 | 3.000 | 200 | 0.55× | 0.79× | 3 | 1 |",
		"| direct | 8 | 64 B | 3000 | 2.000 | 5.000 | 40 | 1.00× | – | 1 | 0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	main, paired, ok := strings.Cut(out, "Round by round against plain")
	if !ok {
		t.Fatalf("no round-by-round table:\n%s", out)
	}
	if n := strings.Count(main, "\n| "); n != 4 {
		t.Errorf("%d table rows, want 4 (idle results left out):\n%s", n, out)
	}
	// Round by round: keyed 1000/1400, 1100/1600, 1200/100; direct
	// 2000/1400, 9999/1600, 2000/100. Plain itself, and direct at 8
	// sessions (no plain there, one round), have no row.
	for _, want := range []string{
		"| direct | 1 | 64 B | 6.25× | 1.43× | 20.00× | 3 |",
		"| keyed | 1 | 64 B | 0.71× | 0.69× | 12.00× | 3 |",
	} {
		if !strings.Contains(paired, want) {
			t.Errorf("round-by-round table lacks %q:\n%s", want, paired)
		}
	}
	if n := strings.Count(paired, "\n| "); n != 3 {
		t.Errorf("%d round-by-round lines, want the header and 2 rows:\n%s", n-1, paired)
	}
}

// TestReportPairedNeedsEqualRounds: a label whose rounds do not match the
// baseline's one for one (a run cut short) gets no round-by-round row,
// rather than ratios of cells from different rounds.
func TestReportPairedNeedsEqualRounds(t *testing.T) {
	lines := []string{
		`{"label":"direct","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":2000}`,
		`{"label":"plain","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":1000}`,
		`{"label":"keyed","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":800}`,
		`{"label":"direct","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":2000}`,
		`{"label":"plain","mode":"load","sessions":1,"payload_bytes":64,"calls_per_sec":1000}`,
	}
	out := reportMedians(t, lines)
	_, paired, _ := strings.Cut(out, "Round by round against plain")
	if !strings.Contains(paired, "| direct | 1 | 64 B | 2.00× | 2.00× | 2.00× | 2 |") {
		t.Errorf("round-by-round table lacks direct's row:\n%s", out)
	}
	if strings.Contains(paired, "| keyed |") {
		t.Errorf("keyed ran one round of plain's two, yet has a round-by-round row:\n%s", out)
	}
}

// reportMedians writes lines to a file and returns what -report -medians
// prints for it.
func reportMedians(t *testing.T, lines []string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"-report", "-medians", f}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return out.String()
}
