package toolsearch

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"strings"
	"testing"
)

// explain says why a tool scored what it did for a request (an index of
// per-field saturation): each term's share per field before the factors,
// how many of the request's counted words it matched, and the request's
// and the tool's actions.
func explain(ix *Index, query, name string) string {
	q, err := ParseQuery(query)
	if err != nil {
		return err.Error()
	}
	s := ix.cur.Load()
	d := int32(slices.Index(s.names, name))
	if d < 0 {
		return "no such tool"
	}
	qts, counted := ix.queryTerms(s, q)
	var b strings.Builder
	n := float64(s.n)
	var total float32
	var matched uint32
	fields := []string{"N", "T", "D", "P", "S"}
	for _, qt := range qts {
		list := s.terms[qt.term]
		var df int
		for _, h := range list {
			df += len(h.ps)
		}
		if df == 0 {
			continue
		}
		idf := float32(math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5)))
		for _, h := range list {
			for _, p := range h.ps {
				if s.base[h.slot]+p.doc != d {
					continue
				}
				nm := &s.norm[d]
				var parts []string
				var sum float32
				for f := 0; f < int(numFields); f++ {
					if p.tf[f] > 0 {
						c := qt.w * idf * ix.wk[f] * p.tf[f] / (p.tf[f] + nm[f])
						sum += c
						parts = append(parts, fmt.Sprintf("%s%.2f", fields[f], c))
					}
				}
				total += sum
				matched |= qt.words
				fmt.Fprintf(&b, " %s(w%.2f idf%.1f)=%.2f[%s]", qt.term, qt.w, idf, sum, strings.Join(parts, " "))
			}
		}
	}
	nc := bits.OnesCount32(counted)
	fmt.Fprintf(&b, " | raw %.2f coord %d/%d act q%d t%d", total, bits.OnesCount32(matched&counted), nc, q.action, s.acts[d])
	return b.String()
}

// TestExplainMisses prints, with TOOLSEARCH_EXPLAIN set and -v, every
// request the shipped defaults miss in the leave-servers-out folds: its
// words, values, hints and action, the top 5 and the right tool, each with
// its terms' shares per field (N name, T title, D description, P
// parameters, S server). It is how issue 39's fourth pass classified the
// misses; it checks nothing.
func TestExplainMisses(t *testing.T) {
	if os.Getenv("TOOLSEARCH_EXPLAIN") == "" {
		t.Skip("TOOLSEARCH_EXPLAIN unset")
	}
	docs := loadCatalog(t)
	qs := loadQueries(t)
	ix := New(nil)
	ix.ReplaceAll(docs)
	folds := serverFolds(docs, qs)
	for f, test := range folds {
		_, testQs := within(docs, qs, test)
		for _, tq := range testQs {
			q := qs[slices.IndexFunc(qs, func(x benchQuery) bool { return x.Query == tq.Query })]
			hits := ix.Search(q.Query, 50, nil)
			r := slices.IndexFunc(hits, func(h Hit) bool { return slices.Contains(q.Tools, h.Name) }) + 1
			if r >= 1 && r <= 5 {
				continue
			}
			pq, _ := ParseQuery(q.Query)
			fmt.Printf("MISS fold%d para=%v set=%s %q words=%v values=%v hints=%v act=%d want=%v rank=%d\n", f, q.Paraphrase, q.Set, q.Query, pq.words, pq.Values(), pq.hints, pq.action, q.Tools, r)
			for i, h := range hits[:min(5, len(hits))] {
				fmt.Printf("   %d %s %.2f:%s\n", i+1, h.Name, h.Score, explain(ix, q.Query, h.Name))
			}
			sc := 0.0
			if r > 0 {
				sc = hits[r-1].Score
			}
			fmt.Printf("   want %s %.2f:%s\n", q.Tools[0], sc, explain(ix, q.Query, q.Tools[0]))
		}
	}
}
