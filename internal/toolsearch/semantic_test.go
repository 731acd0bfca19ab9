package toolsearch

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// writeShapeModel writes a model of potion-base-8M's shape (a WordPiece
// vocabulary of 29,528 tokens, 256 dimensions, F32) with random vectors:
// its rankings mean nothing, its costs (load, memory, embedding,
// re-ranking) are a real model's. The vocabulary is the catalog's words,
// their "##" pieces and filler tokens.
func writeShapeModel(tb testing.TB) string {
	tb.Helper()
	const vocabSize, dim = 29528, 256
	vocab := map[string]int{"[UNK]": 0}
	add := func(t string) {
		if _, ok := vocab[t]; !ok && len(vocab) < vocabSize {
			vocab[t] = len(vocab)
		}
	}
	for _, d := range loadCatalog(tb) {
		for _, w := range words(nil, d.Name+" "+d.Title+" "+d.Description) {
			add(w)
			if len(w) > 4 {
				add(w[:3])
				add("##" + w[3:])
			}
		}
	}
	for i := 0; len(vocab) < vocabSize; i++ {
		add(fmt.Sprintf("filler%d", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 0, vocabSize*dim*4)
	for range vocabSize * dim {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(rng.NormFloat64())))
	}
	dir := tb.TempDir()
	tj, _ := json.Marshal(map[string]any{
		"normalizer":    map[string]any{"type": "BertNormalizer", "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "vocab": vocab},
	})
	header, _ := json.Marshal(map[string]any{"embeddings": map[string]any{"dtype": "F32", "shape": []int{vocabSize, dim}, "data_offsets": []int{0, len(data)}}})
	st := append(binary.LittleEndian.AppendUint64(nil, uint64(len(header))), header...)
	for name, b := range map[string][]byte{"tokenizer.json": tj, "model.safetensors": append(st, data...)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// BenchmarkSearchSemanticCost is BenchmarkSearchSemantic with a model of
// potion-base-8M's shape and random vectors (writeShapeModel): what the
// semantic stage costs, whatever model of that size is given. It reports
// the model's load time and heap, and 10,000 tools' embedding and
// indexing time.
func BenchmarkSearchSemanticCost(b *testing.B) {
	dir := writeShapeModel(b)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	m, err := LoadModel(dir)
	if err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	modelMiB := float64(after.HeapAlloc-min(before.HeapAlloc, after.HeapAlloc)) / (1 << 20)
	loadAllocMiB := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20) // all the load allocated, kept or not
	docs := synthetic(b, 10000)
	plain := New(nil)
	start = time.Now()
	plain.ReplaceAll(docs)
	lexBuild := time.Since(start)
	ix := New(&Options{Model: m})
	start = time.Now()
	ix.ReplaceAll(docs)
	embed := time.Since(start) - lexBuild
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
	b.ReportMetric(float64(load.Milliseconds()), "load-ms")
	b.ReportMetric(modelMiB, "model-MiB")
	b.ReportMetric(loadAllocMiB, "load-alloc-MiB")
	b.ReportMetric(float64(embed.Milliseconds()), "embed10k-ms")
	runtime.KeepAlive(m)
}
