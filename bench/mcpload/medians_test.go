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
	f := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"-report", "-medians", f}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"| configuration | sessions | payload | calls/s | p50 ms | p99 ms | CPU µs/call | vs direct | vs plain | rounds | errors |",
		"| direct | 1 | 64 B | 2000 | 0.400 | 1.000 | 50 | 1.00× | 1.43× | 3 | 0 |",
		"| plain | 1 | 64 B | 1400 | 0.600 | 2.000 | 100 | 0.70× | 1.00× | 3 | 0 |",
		"| keyed (keys pool:4, 33% repeats) | 1 | 64 B | 1100 | 0.900 | 3.000 | 200 | 0.55× | 0.79× | 3 | 1 |",
		"| direct | 8 | 64 B | 3000 | 2.000 | 5.000 | 40 | 1.00× | – | 1 | 0 |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "\n| "); n != 4 {
		t.Errorf("%d table rows, want 4 (idle results left out):\n%s", n, out.String())
	}
}
