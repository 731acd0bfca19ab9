package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func ms1(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestQuantileKnownSamples(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms1(i + 1) // 1..100 ms
	}
	ten := hundred[:10] // 1..10 ms
	tests := []struct {
		name     string
		sorted   []time.Duration
		num, den int
		want     time.Duration
	}{
		{"empty", nil, 1, 2, 0},
		{"one p50", hundred[:1], 1, 2, ms1(1)},
		{"one p99", hundred[:1], 99, 100, ms1(1)},
		{"two p50 is the lower", hundred[:2], 1, 2, ms1(1)},
		{"100 p50", hundred, 1, 2, ms1(50)},
		{"100 p90", hundred, 9, 10, ms1(90)},
		{"100 p99", hundred, 99, 100, ms1(99)},
		{"100 p100", hundred, 1, 1, ms1(100)},
		{"10 p50", ten, 1, 2, ms1(5)},
		{"10 p90", ten, 9, 10, ms1(9)},
		{"10 p99 rounds up to the max", ten, 99, 100, ms1(10)},
		{"3 p50", hundred[:3], 1, 2, ms1(2)},
		{"3 p90", hundred[:3], 9, 10, ms1(3)},
		{"zero quantile clamps to the min", ten, 0, 1, ms1(1)},
		{"bad denominator", ten, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quantile(tt.sorted, tt.num, tt.den); got != tt.want {
				t.Errorf("quantile(%d samples, %d/%d) = %v, want %v", len(tt.sorted), tt.num, tt.den, got, tt.want)
			}
		})
	}
}

// TestQuantileDefinition checks the nearest-rank definition on random
// samples with ties: q is a sample, at least p of the samples are <= q, and
// fewer than p are < q.
func TestQuantileDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(300)
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(r.IntN(50)) // many ties
		}
		slices.Sort(s)
		for _, p := range [][2]int{{1, 2}, {9, 10}, {99, 100}, {999, 1000}} {
			q := quantile(s, p[0], p[1])
			if !slices.Contains(s, q) {
				t.Fatalf("n=%d p=%v: %v is not a sample", n, p, q)
			}
			le, lt := 0, 0
			for _, v := range s {
				if v <= q {
					le++
				}
				if v < q {
					lt++
				}
			}
			// le/n >= p and lt/n < p, in integers.
			if le*p[1] < n*p[0] || lt*p[1] >= n*p[0] {
				t.Fatalf("n=%d p=%d/%d: q=%v has %d <= and %d <", n, p[0], p[1], q, le, lt)
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	if got := summarize(nil); got != (summary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", got)
	}
	// 1..100 ms, shuffled: summarize must sort.
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = ms1(i + 1)
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	got := summarize(s)
	want := summary{Count: 100, Min: ms1(1), Mean: 50500 * time.Microsecond, P50: ms1(50), P90: ms1(90), P99: ms1(99), Max: ms1(100)}
	if got != want {
		t.Errorf("summarize = %+v\nwant        %+v", got, want)
	}
	// An outlier moves the max only: of 101 samples p99 is the 100th.
	s = append(s, time.Second) // 101 samples now
	got = summarize(s)
	if got.Max != time.Second || got.P99 != ms1(100) || got.P50 != ms1(51) {
		t.Errorf("with outlier: %+v", got)
	}
}
