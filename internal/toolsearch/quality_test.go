package toolsearch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// catalogFile is one file of testdata/catalog.
type catalogFile struct {
	Server  string `json:"server"`
	Source  string `json:"source"`
	License string `json:"license"`
	Tools   []struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
}

// benchQuery is one request of testdata/queries.json.
type benchQuery struct {
	Query      string   `json:"query"`
	Tools      []string `json:"tools"`
	Paraphrase bool     `json:"paraphrase"`
	Set        string   `json:"set"`
}

// loadCatalog reads testdata/catalog into documents named as a gateway
// projects them (server__tool).
func loadCatalog(t testing.TB) []Doc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "catalog", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no catalog: %v", err)
	}
	var docs []Doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c catalogFile
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Server == "" || c.Source == "" || c.License == "" || len(c.Tools) == 0 {
			t.Fatalf("%s: server, source, license and tools are required", f)
		}
		for _, tl := range c.Tools {
			params, err := ParamsFromSchema(tl.InputSchema)
			if err != nil {
				t.Fatalf("%s: %s: %v", f, tl.Name, err)
			}
			docs = append(docs, Doc{
				Name: c.Server + "__" + tl.Name, Server: c.Server,
				Title: tl.Title, Description: tl.Description, Params: params,
			})
		}
	}
	return docs
}

func loadQueries(t testing.TB) []benchQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "queries.json"))
	if err != nil {
		t.Fatal(err)
	}
	var qs []benchQuery
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatal(err)
	}
	return qs
}

// metrics are the benchmark's figures over a set of queries.
type metrics struct {
	n                int
	recall1, recall5 float64 // share of queries with a right tool in the top 1, 5
	mrr              float64 // mean reciprocal rank of the first right tool (0 when not in the top 10)
	missed5          []string
}

func (m metrics) String() string {
	return fmt.Sprintf("n=%d recall@1=%.3f recall@5=%.3f MRR=%.3f", m.n, m.recall1, m.recall5, m.mrr)
}

// evaluate runs the queries whose set is in sets against ix.
func evaluate(ix *Index, qs []benchQuery, sets ...string) (all, para metrics) {
	return evaluateRanked(qs, sets, func(q string) []string {
		var names []string
		for _, h := range ix.Search(q, 10, nil) {
			names = append(names, h.Name)
		}
		return names
	})
}

// evaluateRanked measures a ranking (the names of its top 10 for a
// request, best first) on the queries whose set is in sets.
func evaluateRanked(qs []benchQuery, sets []string, rank func(query string) []string) (all, para metrics) {
	for _, q := range qs {
		if !slices.Contains(sets, q.Set) {
			continue
		}
		got := rank(q.Query)
		r := slices.IndexFunc(got, func(n string) bool { return slices.Contains(q.Tools, n) }) + 1
		for _, m := range []*metrics{&all, &para} {
			if m == &para && !q.Paraphrase {
				continue
			}
			m.n++
			if r == 1 {
				m.recall1++
			}
			if r >= 1 && r <= 5 {
				m.recall5++
			} else {
				m.missed5 = append(m.missed5, fmt.Sprintf("%q want %v got %v", q.Query, q.Tools, got[:min(3, len(got))]))
			}
			if r > 0 {
				m.mrr += 1 / float64(r)
			}
		}
	}
	for _, m := range []*metrics{&all, &para} {
		if m.n > 0 {
			m.recall1 /= float64(m.n)
			m.recall5 /= float64(m.n)
			m.mrr /= float64(m.n)
		}
	}
	return all, para
}

// Floors of TestQuality (over the catalog of 38 servers since issue 39:
// more tools to confuse, lower figures): just under what the index reaches, so that a
// regression shows. See docs/search.md for the figures.
const (
	floorRecall5     = 0.73
	floorRecall5Para = 0.56
	floorMRR         = 0.56
)

// TestQuality measures the index on the benchmark: recall@1, recall@5 and
// MRR over every request and over the paraphrased ones, for the full index
// and for plain BM25 over the same words, on the development set and on
// the held-out set. It fails when the full index falls under its floors or
// is not better than plain BM25.
func TestQuality(t *testing.T) {
	docs := loadCatalog(t)
	qs := loadQueries(t)
	full := New(nil)
	full.ReplaceAll(docs)
	plain := New(&Options{Plain: true})
	plain.ReplaceAll(docs)
	noDomain := defaultTuning
	noDomain.domain = 0
	step1 := newIndex(nil, noDomain) // the index without the domain table
	step1.ReplaceAll(docs)

	sets := [][]string{{"dev"}, {"heldout"}, {"dev", "heldout"}}
	if os.Getenv("TOOLSEARCH_DEV_ONLY") != "" {
		sets = sets[:1]
	}
	for _, set := range sets {
		name := strings.Join(set, "+")
		fa, fp := evaluate(full, qs, set...)
		pa, pp := evaluate(plain, qs, set...)
		sa, sp := evaluate(step1, qs, set...)
		t.Logf("%-12s no domain table all: %v", name, sa)
		t.Logf("%-12s no domain table para: %v", name, sp)
		t.Logf("%-12s full  all: %v", name, fa)
		t.Logf("%-12s full  para: %v", name, fp)
		t.Logf("%-12s plain all: %v", name, pa)
		t.Logf("%-12s plain para: %v", name, pp)
		if testing.Verbose() && os.Getenv("TOOLSEARCH_MISSES") != "" {
			for _, m := range fa.missed5 {
				t.Logf("  miss: %s", m)
			}
		}
		if len(set) == 2 {
			if fa.recall5 < floorRecall5 || fp.recall5 < floorRecall5Para || fa.mrr < floorMRR {
				t.Errorf("full index under its floors: all %v, paraphrases %v (floors recall@5 %.2f, %.2f on paraphrases, MRR %.2f)",
					fa, fp, floorRecall5, floorRecall5Para, floorMRR)
			}
			if fa.recall5 <= pa.recall5 || fa.mrr <= pa.mrr || fp.recall5 <= pp.recall5 {
				t.Errorf("full index not better than plain BM25: full %v / %v, plain %v / %v", fa, fp, pa, pp)
			}
		}
	}
}

// TestQueriesHonest checks the benchmark's requests (sets "dev" and
// "heldout" of issue 18, "new" and "fresh" of issue 39's first and second
// passes): each names tools of
// the catalog, a request flagged paraphrase shares no content word with
// any of its tools' names (after the same splitting, common-word removal
// and stemming as the index), and a request not flagged shares one.
func TestQueriesHonest(t *testing.T) {
	docs := loadCatalog(t)
	names := map[string]bool{}
	for _, d := range docs {
		names[d.Name] = true
	}
	qs := loadQueries(t)
	var para, held, fresh, freshPara, later, laterPara int
	for _, q := range qs {
		if q.Set != "dev" && q.Set != "heldout" && q.Set != "new" && q.Set != "fresh" {
			t.Errorf("%q: set %q", q.Query, q.Set)
		}
		if q.Set == "heldout" {
			held++
		}
		stems := func(s string) map[string]bool {
			m := map[string]bool{}
			for _, w := range words(nil, s) {
				if _, stop := stopWords[w]; !stop {
					m[stem(w)] = true
				}
			}
			return m
		}
		qw := stems(q.Query)
		shared := false
		for _, n := range q.Tools {
			if !names[n] {
				t.Errorf("%q: no tool %s in the catalog", q.Query, n)
			}
			for w := range stems(n) {
				shared = shared || qw[w]
			}
		}
		if q.Paraphrase == shared {
			t.Errorf("%q: paraphrase %v, but it shares a word with %v: %v", q.Query, q.Paraphrase, q.Tools, shared)
		}
		switch {
		case q.Set == "new":
			fresh++
			if q.Paraphrase {
				freshPara++
			}
		case q.Set == "fresh":
			later++
			if q.Paraphrase {
				laterPara++
			}
		case q.Paraphrase:
			para++
		}
	}
	first := len(qs) - fresh - later // the requests of issue 18's benchmark
	if first < 100 || 2*para < first {
		t.Errorf("%d requests of the first benchmark, %d paraphrased: want at least 100, half paraphrased", first, para)
	}
	if held*4 < first {
		t.Errorf("%d of %d held out: want about 30%%", held, first)
	}
	if fresh < 100 || 3*freshPara < fresh {
		t.Errorf("%d new requests, %d paraphrased: want at least 100, a third paraphrased", fresh, freshPara)
	}
	if later < 20 || 4*laterPara < later {
		t.Errorf("%d requests of the second pass's servers, %d paraphrased: want at least 20, a quarter paraphrased", later, laterPara)
	}
	t.Logf("%d requests (%d new, %d fresh), %d paraphrased (%d new, %d fresh), %d held out; %d tools",
		len(qs), fresh, later, para+freshPara+laterPara, freshPara, laterPara, held, len(docs))
}
