package toolsearch

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// envModel loads the model TOOLSEARCH_MODEL names, or skips.
func envModel(tb testing.TB) *Model {
	tb.Helper()
	dir := os.Getenv("TOOLSEARCH_MODEL")
	if dir == "" {
		tb.Skip("TOOLSEARCH_MODEL is not set: set it to a model2vec model's directory (model.safetensors, tokenizer.json; e.g. minishlab/potion-base-8M) to measure the semantic stage")
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	m, err := LoadModel(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	tb.Logf("model %s: %d dimensions, loaded in %v, %.1f MiB of heap", dir, m.Dim(), time.Since(start).Round(time.Millisecond),
		float64(after.HeapAlloc-min(before.HeapAlloc, after.HeapAlloc))/(1<<20))
	return m
}

// TestSemanticMeasured measures the semantic stage on the benchmark when
// TOOLSEARCH_MODEL names a model: the leave-servers-out folds and the new
// servers' requests, with the shipped lexical defaults, without and with
// the model (at weights 0.3, 0.5 and 0.7; nothing is chosen on a fold).
func TestSemanticMeasured(t *testing.T) {
	m := envModel(t)
	docs := loadCatalog(t)
	qs := loadQueries(t)
	for _, w := range []float64{0, 0.3, 0.5, 0.7} {
		opts := &Options{SemanticWeight: w}
		if w > 0 {
			opts.Model = m
		}
		start := time.Now()
		ix := New(opts)
		ix.ReplaceAll(docs)
		build := time.Since(start)
		folds := serverFolds(docs, qs)
		var rs []foldResult
		for _, test := range folds {
			_, testQs := within(docs, qs, test)
			for i := range testQs {
				for _, q := range qs {
					if q.Query == testQs[i].Query {
						testQs[i].Tools = q.Tools
					}
				}
			}
			all, para := evaluate(ix, testQs, "fold")
			rs = append(rs, foldResult{servers: test, chosen: "fixed", all: all, para: para})
		}
		ma, wa, mp, wp := summary(rs)
		na, np := evaluate(ix, qs, "new")
		t.Logf("semantic weight %.1f (index of %d tools built in %v): folds recall@5 mean %.3f worst %.3f, paraphrases mean %.3f worst %.3f; new servers %v / para %v",
			w, len(docs), build.Round(time.Millisecond), ma, wa, mp, wp, na, np)
	}
}

// BenchmarkSearchSemantic is BenchmarkSearch with the model
// TOOLSEARCH_MODEL names re-ranking the candidates.
func BenchmarkSearchSemantic(b *testing.B) {
	m := envModel(b)
	ix := New(&Options{Model: m})
	start := time.Now()
	ix.ReplaceAll(synthetic(b, 10000))
	b.Logf("10,000 tools embedded and indexed in %v", time.Since(start).Round(time.Millisecond))
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
