package main

import (
	"slices"
	"time"
)

// summary is the latency distribution of the successful calls of a run.
type summary struct {
	Count                    int
	Min, Mean, P50, P90, P99 time.Duration
	Max                      time.Duration
}

// summarize sorts samples in place and returns their exact distribution.
func summarize(samples []time.Duration) summary {
	if len(samples) == 0 {
		return summary{}
	}
	slices.Sort(samples)
	var sum int64
	for _, s := range samples {
		sum += int64(s)
	}
	return summary{
		Count: len(samples),
		Min:   samples[0],
		Mean:  time.Duration(sum / int64(len(samples))),
		P50:   quantile(samples, 1, 2),
		P90:   quantile(samples, 9, 10),
		P99:   quantile(samples, 99, 100),
		Max:   samples[len(samples)-1],
	}
}

// quantile returns the num/den quantile of sorted by the nearest-rank method:
// the smallest sample such that at least num/den of all samples are less than
// or equal to it, i.e. sorted[ceil(n*num/den)-1]. It is always one of the
// samples (no interpolation). Integer arithmetic keeps it exact: a float
// 0.9*n can land just above an integer and move the rank by one.
func quantile(sorted []time.Duration, num, den int) time.Duration {
	n := len(sorted)
	if n == 0 || den <= 0 {
		return 0
	}
	rank := (n*num + den - 1) / den
	rank = max(rank, 1)
	rank = min(rank, n)
	return sorted[rank-1]
}
