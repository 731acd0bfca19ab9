package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// result is what one run reports; with -json it is printed as one object.
// Latencies are of successful calls only; calls counts successes and errors;
// calls_per_sec counts successes only.
type result struct {
	Label        string `json:"label,omitempty"`
	Mode         string `json:"mode"` // "load" or "idle"
	Transport    string `json:"transport"`
	Target       string `json:"target"`
	Protocol     string `json:"protocol_version,omitempty"`
	Tool         string `json:"tool"`
	PayloadBytes int    `json:"payload_bytes"`
	Sessions     int    `json:"sessions"`    // concurrent loops (idle: sessions asked for)
	Connections  int    `json:"connections"` // MCP sessions open
	Shared       bool   `json:"shared,omitempty"`
	// Keys is -keys ("unique", "pool:N") when calls carried
	// _meta.idempotencyKey; Repeats counts the measured calls whose key the
	// loop had sent before (answered from its journal by a gateway that
	// journals keyed calls).
	Keys    string `json:"keys,omitempty"`
	Repeats int64  `json:"repeats,omitempty"`

	DurationS    float64  `json:"duration_s"` // measured window (idle: time held)
	WarmupS      float64  `json:"warmup_s,omitempty"`
	Calls        int64    `json:"calls"`
	Errors       int64    `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	LostSessions int      `json:"lost_sessions,omitempty"`
	CallsPerSec  float64  `json:"calls_per_sec"`
	MinMs        float64  `json:"min_ms"`
	MeanMs       float64  `json:"mean_ms"`
	P50Ms        float64  `json:"p50_ms"`
	P90Ms        float64  `json:"p90_ms"`
	P99Ms        float64  `json:"p99_ms"`
	MaxMs        float64  `json:"max_ms"`

	// CPU time used during the measured window: by this process, by the
	// whole machine (all cores, from /proc/stat) and by -rss-pid.
	CPUMs               float64 `json:"cpu_ms"`
	CPUMsPerCall        float64 `json:"cpu_ms_per_call"`
	MachineCPUMs        float64 `json:"machine_cpu_ms,omitempty"`
	MachineCPUMsPerCall float64 `json:"machine_cpu_ms_per_call,omitempty"`
	TargetPID           int     `json:"target_pid,omitempty"`
	TargetCPUMs         float64 `json:"target_cpu_ms,omitempty"`
	TargetCPUMsPerCall  float64 `json:"target_cpu_ms_per_call,omitempty"`

	// RSS of -rss-pid in KiB: before any session opened, the most sampled
	// (under load every 100 ms from before the sessions open until the loops
	// end; idle, every 250 ms while the sessions are held), and at the end
	// of an idle hold.
	TargetRSSStartKB int64 `json:"target_rss_start_kb,omitempty"`
	TargetRSSMaxKB   int64 `json:"target_rss_max_kb,omitempty"`
	TargetRSSEndKB   int64 `json:"target_rss_end_kb,omitempty"`

	// Idle mode only.
	OpenErrors int64   `json:"open_errors,omitempty"` // sessions that did not open or whose call failed
	OpenS      float64 `json:"open_s,omitempty"`
	SelfRSSKB  int64   `json:"self_rss_kb,omitempty"`
}

func newResult(cfg *config, mode string) *result {
	r := &result{
		Label:        cfg.Label,
		Mode:         mode,
		Transport:    "http",
		Target:       describeTarget(cfg),
		Tool:         cfg.Tool,
		PayloadBytes: cfg.PayloadBytes,
		Sessions:     cfg.Sessions,
		Shared:       cfg.Shared,
		Keys:         cfg.Keys.String(),
		TargetPID:    cfg.RSSPID,
	}
	if cfg.URL == "" {
		r.Transport = "stdio"
	}
	if mode == "load" {
		r.WarmupS = cfg.Warmup.Seconds()
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (r *result) setLatency(s summary, elapsed time.Duration) {
	r.DurationS = elapsed.Seconds()
	if elapsed > 0 {
		r.CallsPerSec = float64(s.Count) / elapsed.Seconds()
	}
	r.MinMs, r.MeanMs, r.P50Ms, r.P90Ms = ms(s.Min), ms(s.Mean), ms(s.P50), ms(s.P90)
	r.P99Ms, r.MaxMs = ms(s.P99), ms(s.Max)
}

func (r *result) setCPU(before, after snapshot, target bool) {
	perCall := func(d time.Duration) float64 {
		if r.Calls == 0 {
			return 0
		}
		return ms(d) / float64(r.Calls)
	}
	r.CPUMs = ms(after.self - before.self)
	r.CPUMsPerCall = perCall(after.self - before.self)
	if before.machineOK && after.machineOK {
		r.MachineCPUMs = ms(after.machine - before.machine)
		r.MachineCPUMsPerCall = perCall(after.machine - before.machine)
	}
	if target && before.targetOK && after.targetOK {
		r.TargetCPUMs = ms(after.target - before.target)
		r.TargetCPUMsPerCall = perCall(after.target - before.target)
	}
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

// writeHuman prints a result as a small two-column table.
func writeHuman(w io.Writer, r *result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	if r.Label != "" {
		row("label", "%s", r.Label)
	}
	row("target", "%s %s (protocol %s)", r.Transport, r.Target, r.Protocol)
	row("tool", "%s, payload %d B", r.Tool, r.PayloadBytes)
	shared := ""
	if r.Shared {
		shared = ", shared"
	}
	if r.Mode == "idle" {
		row("sessions", "%d asked, %d open, %d failed (opened in %.2fs)", r.Sessions, r.Connections, r.OpenErrors, r.OpenS)
		row("held", "%.2fs", r.DurationS)
		if r.Errors > 0 {
			row("call errors", "%d", r.Errors)
		}
		if r.SelfRSSKB > 0 {
			row("mcpload rss", "%s", mib(r.SelfRSSKB))
		}
	} else {
		row("sessions", "%d loops on %d sessions%s", r.Sessions, r.Connections, shared)
		row("window", "%.2fs after %.2fs warmup", r.DurationS, r.WarmupS)
		row("calls", "%d (%d errors, %d sessions lost)", r.Calls, r.Errors, r.LostSessions)
		if r.Keys != "" {
			row("keys", "%s, %d repeated", r.Keys, r.Repeats)
		}
		row("calls/s", "%.1f", r.CallsPerSec)
		row("latency ms", "p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (min %.3f, mean %.3f)",
			r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs, r.MinMs, r.MeanMs)
		cpu := fmt.Sprintf("mcpload %.3f  machine %.3f", r.CPUMsPerCall, r.MachineCPUMsPerCall)
		if r.TargetPID > 0 {
			cpu += fmt.Sprintf("  pid %d %.3f", r.TargetPID, r.TargetCPUMsPerCall)
		}
		row("cpu ms/call", "%s", cpu)
	}
	if r.TargetPID > 0 {
		s := fmt.Sprintf("start %s  max %s", mib(r.TargetRSSStartKB), mib(r.TargetRSSMaxKB))
		if r.TargetRSSEndKB > 0 {
			s += "  end " + mib(r.TargetRSSEndKB)
		}
		row(fmt.Sprintf("rss pid %d", r.TargetPID), "%s", s)
	}
	for _, e := range r.ErrorSamples {
		row("error", "%s", e)
	}
	_ = tw.Flush()
}

// readResults reads JSON result objects, one per line, from files.
func readResults(files []string) ([]*result, error) {
	var out []*result
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		line := 0
		for sc.Scan() {
			line++
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var r result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			out = append(out, &r)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return out, nil
}

func renderReport(w io.Writer, files []string, medians bool) error {
	rs, err := readResults(files)
	if err != nil {
		return err
	}
	if medians {
		writeMedians(w, rs)
		return nil
	}
	writeReport(w, rs)
	return nil
}

// cellKey identifies one cell of the matrix.
type cellKey struct {
	sessions, payload int
	shared            bool
}

// writeReport prints markdown: one table of load results per label (in the
// order labels first appear), a comparison of every other label against the
// first, and a table of idle results if any.
func writeReport(w io.Writer, rs []*result) {
	var labels []string
	byLabel := map[string]map[cellKey]*result{}
	var cells []cellKey
	var idle []*result
	for _, r := range rs {
		if r.Mode == "idle" {
			idle = append(idle, r)
			continue
		}
		if _, ok := byLabel[r.Label]; !ok {
			labels = append(labels, r.Label)
			byLabel[r.Label] = map[cellKey]*result{}
		}
		k := cellKey{r.Sessions, r.PayloadBytes, r.Shared}
		if !slices.Contains(cells, k) {
			cells = append(cells, k)
		}
		byLabel[r.Label][k] = r
	}
	slices.SortStableFunc(cells, func(a, b cellKey) int {
		if a.payload != b.payload {
			return a.payload - b.payload
		}
		return a.sessions - b.sessions
	})
	for _, l := range labels {
		name := l
		if name == "" {
			name = "(no label)"
		}
		fmt.Fprintf(w, "### %s\n\n", name)
		fmt.Fprintln(w, "| sessions | payload | calls/s | p50 ms | p90 ms | p99 ms | max ms | errors | CPU ms/call: machine | mcpload | target | target RSS max |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, k := range cells {
			r, ok := byLabel[l][k]
			if !ok {
				continue
			}
			rss := "–"
			if r.TargetRSSMaxKB > 0 {
				rss = mib(r.TargetRSSMaxKB)
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %.3f | %.3f | %.3f | %.3f | %d | %.3f | %.3f | %.3f | %s |\n",
				sessionsCell(k), payloadCell(k.payload), r.CallsPerSec, r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs,
				r.Errors, r.MachineCPUMsPerCall, r.CPUMsPerCall, r.TargetCPUMsPerCall, rss)
		}
		fmt.Fprintln(w)
	}
	if len(labels) > 1 {
		base := labels[0]
		for _, l := range labels[1:] {
			fmt.Fprintf(w, "### %s vs %s\n\n", l, base)
			fmt.Fprintf(w, "| sessions | payload | %s calls/s | %s calls/s | throughput %s/%s | %s p50 ms | %s p50 ms | Δp50 ms | Δp99 ms |\n",
				base, l, l, base, base, l)
			fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
			for _, k := range cells {
				b, okb := byLabel[base][k]
				r, okr := byLabel[l][k]
				if !okb || !okr {
					continue
				}
				ratio := "–"
				if b.CallsPerSec > 0 {
					ratio = fmt.Sprintf("%.0f%%", 100*r.CallsPerSec/b.CallsPerSec)
				}
				fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %s | %.3f | %.3f | %+.3f | %+.3f |\n",
					sessionsCell(k), payloadCell(k.payload), b.CallsPerSec, r.CallsPerSec, ratio,
					b.P50Ms, r.P50Ms, r.P50Ms-b.P50Ms, r.P99Ms-b.P99Ms)
			}
			fmt.Fprintln(w)
		}
	}
	if len(idle) > 0 {
		fmt.Fprintln(w, "### idle sessions")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| label | sessions | open | failed | opened in | target RSS before | target RSS max held | per session |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range idle {
			per := "–"
			if r.Connections > 0 && r.TargetRSSMaxKB > r.TargetRSSStartKB {
				per = fmt.Sprintf("%.1f KiB", float64(r.TargetRSSMaxKB-r.TargetRSSStartKB)/float64(r.Connections))
			}
			fmt.Fprintf(w, "| %s | %d | %d | %d | %.1fs | %s | %s | %s |\n", r.Label, r.Sessions, r.Connections,
				r.OpenErrors, r.OpenS, mib(r.TargetRSSStartKB), mib(r.TargetRSSMaxKB), per)
		}
		fmt.Fprintln(w)
	}
}

func sessionsCell(k cellKey) string {
	if k.shared {
		return fmt.Sprintf("%d (shared)", k.sessions)
	}
	return fmt.Sprint(k.sessions)
}

func payloadCell(n int) string {
	switch {
	case n >= 1024 && n%1024 == 0:
		return fmt.Sprintf("%d KiB", n/1024)
	default:
		return fmt.Sprintf("%d B", n)
	}
}
