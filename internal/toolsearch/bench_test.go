package toolsearch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// synthetic returns n tools: the catalog repeated under renamed servers
// ("github_7__list_issues"), the benchmark's 10,000-tool index.
func synthetic(tb testing.TB, n int) []Doc {
	tb.Helper()
	base := loadCatalog(tb)
	docs := make([]Doc, 0, n)
	for copy := 0; len(docs) < n; copy++ {
		for _, d := range base {
			if len(docs) == n {
				break
			}
			srv := fmt.Sprintf("%s_%d", d.Server, copy)
			d.Name = srv + "__" + strings.TrimPrefix(d.Name, d.Server+"__")
			d.Server = srv
			docs = append(docs, d)
		}
	}
	return docs
}

// BenchmarkSearch searches an index of 10,000 tools with the benchmark's
// requests in turn, and reports the median and the 99th percentile of one
// search (run it with -cpu 1 for one core).
func BenchmarkSearch(b *testing.B) {
	ix := New(nil)
	ix.ReplaceAll(synthetic(b, 10000))
	qs := loadQueries(b)
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		ix.Search(qs[i%len(qs)].Query, 10, nil)
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, durs)
}

func reportPercentiles(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkBuild indexes 10,000 tools at once.
func BenchmarkBuild(b *testing.B) {
	docs := synthetic(b, 10000)
	for b.Loop() {
		New(nil).ReplaceAll(docs)
	}
}

// BenchmarkReplace replaces one server's 50 tools in an index of 10,000.
func BenchmarkReplace(b *testing.B) {
	docs := synthetic(b, 10000)
	ix := New(nil)
	ix.ReplaceAll(docs)
	versions := [2][]Doc{}
	for v := range versions {
		for i := range 50 {
			d := docs[i%len(docs)]
			d.Name = fmt.Sprintf("fifty__tool_%d", i)
			d.Description += fmt.Sprintf(" version %d", v)
			versions[v] = append(versions[v], d)
		}
	}
	for i := 0; b.Loop(); i++ {
		ix.Replace("fifty", versions[i%2])
	}
}
