package main

import (
	"fmt"
	"io"
	"slices"
)

// median returns the median of vs (the mean of the two middle values for an
// even count); vs is sorted in place. It is 0 for no values.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	m := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[m]
	}
	return (vs[m-1] + vs[m]) / 2
}

// cellMedians are the medians over the rounds of one label in one cell.
type cellMedians struct {
	rounds                          int
	callsPerSec, p50, p99, targetUs float64
	errors, repeats, calls          int64
	keys                            string
}

// writeMedians prints one markdown table of load results run in several
// rounds: per label (in the order labels first appear) and cell, the median
// over the rounds of calls/s, p50, p99 and the target's CPU per call, and
// the ratio of the median calls/s to that of the first label (the baseline,
// e.g. direct) and of the second (e.g. the plain gateway) in the same cell.
func writeMedians(w io.Writer, rs []*result) {
	var labels []string
	var cells []cellKey
	groups := map[string]map[cellKey][]*result{}
	for _, r := range rs {
		if r.Mode != "load" {
			continue
		}
		if _, ok := groups[r.Label]; !ok {
			labels = append(labels, r.Label)
			groups[r.Label] = map[cellKey][]*result{}
		}
		k := cellKey{r.Sessions, r.PayloadBytes, r.Shared}
		if !slices.Contains(cells, k) {
			cells = append(cells, k)
		}
		groups[r.Label][k] = append(groups[r.Label][k], r)
	}
	slices.SortStableFunc(cells, func(a, b cellKey) int {
		if a.payload != b.payload {
			return a.payload - b.payload
		}
		return a.sessions - b.sessions
	})
	med := map[string]map[cellKey]cellMedians{}
	for l, byCell := range groups {
		med[l] = map[cellKey]cellMedians{}
		for k, runs := range byCell {
			var cps, p50, p99, cpu []float64
			m := cellMedians{rounds: len(runs), keys: runs[0].Keys}
			for _, r := range runs {
				cps = append(cps, r.CallsPerSec)
				p50 = append(p50, r.P50Ms)
				p99 = append(p99, r.P99Ms)
				cpu = append(cpu, 1000*r.TargetCPUMsPerCall)
				m.errors += r.Errors
				m.repeats += r.Repeats
				m.calls += r.Calls
			}
			m.callsPerSec, m.p50, m.p99, m.targetUs = median(cps), median(p50), median(p99), median(cpu)
			med[l][k] = m
		}
	}
	ratio := func(base string, k cellKey, v float64) string {
		b, ok := med[base][k]
		if !ok || b.callsPerSec == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", v/b.callsPerSec)
	}
	var base1, base2 string
	if len(labels) > 0 {
		base1 = labels[0]
	}
	if len(labels) > 1 {
		base2 = labels[1]
	}
	fmt.Fprintf(w, "| configuration | sessions | payload | calls/s | p50 ms | p99 ms | CPU µs/call | vs %s | vs %s | rounds | errors |\n",
		orNone(base1), orNone(base2))
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, l := range labels {
		for _, k := range cells {
			m, ok := med[l][k]
			if !ok {
				continue
			}
			name := orNone(l)
			if m.keys != "" {
				name += fmt.Sprintf(" (keys %s", m.keys)
				if m.repeats > 0 && m.calls > 0 {
					name += fmt.Sprintf(", %.0f%% repeats", 100*float64(m.repeats)/float64(m.calls))
				}
				name += ")"
			}
			v2 := "–"
			if base2 != "" {
				v2 = ratio(base2, k, m.callsPerSec)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.3f | %.3f | %.0f | %s | %s | %d | %d |\n",
				name, sessionsCell(k), payloadCell(k.payload), m.callsPerSec, m.p50, m.p99, m.targetUs,
				ratio(base1, k, m.callsPerSec), v2, m.rounds, m.errors)
		}
	}
	fmt.Fprintln(w)
	if base2 != "" {
		writePaired(w, labels, cells, groups, base2)
	}
}

// writePaired prints, for each label but base and each cell where both ran
// the same number of rounds (two or more), the ratio of its calls/s to
// base's round by round (the i-th run of each, in the order of rs: one
// round): their median, lowest and highest. A round's two cells ran
// minutes apart at most, so a machine that slows down or speeds up
// between rounds moves both; the spread says how far one round is to be
// trusted.
func writePaired(w io.Writer, labels []string, cells []cellKey, groups map[string]map[cellKey][]*result, base string) {
	header := false
	for _, l := range labels {
		if l == base {
			continue
		}
		for _, k := range cells {
			runs, bruns := groups[l][k], groups[base][k]
			if len(runs) < 2 || len(runs) != len(bruns) {
				continue
			}
			var rs []float64
			for i, r := range runs {
				if bruns[i].CallsPerSec > 0 {
					rs = append(rs, r.CallsPerSec/bruns[i].CallsPerSec)
				}
			}
			if len(rs) < 2 {
				continue
			}
			if !header {
				fmt.Fprintf(w, "Round by round against %s (each round's calls/s over %s's in the same round):\n\n", base, base)
				fmt.Fprintln(w, "| configuration | sessions | payload | median | lowest | highest | rounds |")
				fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
				header = true
			}
			lo, hi := slices.Min(rs), slices.Max(rs)
			fmt.Fprintf(w, "| %s | %s | %s | %.2f× | %.2f× | %.2f× | %d |\n",
				orNone(l), sessionsCell(k), payloadCell(k.payload), median(rs), lo, hi, len(rs))
		}
	}
	if header {
		fmt.Fprintln(w)
	}
}

func orNone(label string) string {
	if label == "" {
		return "(no label)"
	}
	return label
}
