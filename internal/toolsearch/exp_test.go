package toolsearch

// The third pass of issue 39 (docs/BENCHMARKS.md, "Third pass"): the
// experiments behind its tables, each skipped unless its variable is set.
// TOOLSEARCH_EXP=prf|prf2|coord|named|explong|thes|combo|full|docexp runs
// the leave-servers-out evaluation with the shipped defaults and with the
// variant's settings chosen per fold (TOOLSEARCH_EXP_EACH=all adds each
// setting fixed; TOOLSEARCH_THES lists thesaurus files made by
// internal/wordnetgen); TOOLSEARCH_FUSION, TOOLSEARCH_DIV, TOOLSEARCH_RANKS,
// TOOLSEARCH_DIFF and TOOLSEARCH_Q run the fusion, diversification,
// miss-rank, diff and explain checks; BenchmarkSearchVariant with
// TOOLSEARCH_BENCH=base|prf|thes times a variant over 10,000 tools.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// thesMap builds thesaurus expansions (stems) at the given weights.
func thesMap(es []thesEntry, syn, hyper, derived float32) map[string][]wterm {
	m := map[string][]wterm{}
	add := func(key, term string, w float32) {
		if key == term || w <= 0 {
			return
		}
		if _, stop := stopWords[term]; stop {
			return
		}
		for i, e := range m[key] {
			if e.term == term {
				m[key][i].w = max(e.w, w)
				return
			}
		}
		m[key] = append(m[key], wterm{term: term, w: w})
	}
	for _, e := range es {
		k := stem(e.word)
		for _, w := range e.syn {
			add(k, stem(w), syn)
		}
		for _, w := range e.hyper {
			add(k, stem(w), hyper)
		}
		for _, w := range e.derived {
			add(k, stem(w), derived)
		}
	}
	return m
}

func shippedCand() candidate {
	return candidate{name: "shipped", tu: defaultTuning, weights: DefaultWeights(), fk1: DefaultFieldK1(), fb: DefaultFieldB()}
}

func TestExperiment(t *testing.T) {
	which := os.Getenv("TOOLSEARCH_EXP")
	if which == "" {
		t.Skip("TOOLSEARCH_EXP unset")
	}
	docs := loadCatalog(t)
	qs := loadQueries(t)
	var cands []candidate
	switch which {
	case "prf":
		for _, k := range []int{3, 5, 10} {
			for _, m := range []int{5, 10, 20} {
				for _, w := range []float32{0.1, 0.2, 0.35, 0.5} {
					for _, fields := range []uint8{0, 1} {
						for _, idf := range []bool{false, true} {
							c := shippedCand()
							c.tu.prfK, c.tu.prfTerms, c.tu.prfW, c.tu.prfFields, c.tu.prfIDF = k, m, w, fields, idf
							c.name = fmt.Sprintf("prf k=%d m=%d w=%g fields=%d idf=%v", k, m, w, fields, idf)
							cands = append(cands, c)
						}
					}
				}
			}
		}
	case "prf2":
		for _, k := range []int{3, 5, 10} {
			for _, w := range []float32{0.1, 0.2, 0.35} {
				for _, one := range []bool{false, true} {
					for _, srvOn := range []bool{false, true} {
						c := shippedCand()
						c.tu.prfK, c.tu.prfTerms, c.tu.prfW, c.tu.prfFields, c.tu.prfIDF, c.tu.prfOne, c.tu.prfSrv = k, 10, w, 0, true, one, srvOn
						c.name = fmt.Sprintf("prf k=%d w=%g one=%v srv=%v", k, w, one, srvOn)
						cands = append(cands, c)
					}
				}
			}
		}
	case "coord":
		for _, sm := range []float32{0.45, 0.6, 0.9} {
			for _, wk := range []float32{0.25, 0.5, 0.75} {
				c := shippedCand()
				c.tu.strongMin, c.tu.weak = sm, wk
				c.name = fmt.Sprintf("coord strong>=%g weak=%g", sm, wk)
				cands = append(cands, c)
			}
		}
	case "named":
		for _, f := range []float32{0.25, 0.5, 0.75} {
			c := shippedCand()
			c.tu.namedExp = f
			c.name = fmt.Sprintf("named expansions x%g", f)
			cands = append(cands, c)
		}
	case "explong":
		for _, f := range []float32{0.01, 0.25, 0.5, 0.75} {
			c := shippedCand()
			c.tu.expLong = f
			c.name = fmt.Sprintf("expansions' long fields x%g", f)
			cands = append(cands, c)
		}
	case "combo":
		load := func(path string) []thesEntry {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			es, err := parseThesaurus(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return es
		}
		s1, s1d := load("/tmp/thes/s1.txt"), load("/tmp/thes/s1d.txt")
		type th struct {
			name string
			es   []thesEntry
			gate uint8
			ws   [3]float32
		}
		for _, x := range []th{{"none", nil, 0, [3]float32{}}, {"s1 g1 .2/.1/.2", s1, 1, [3]float32{0.2, 0.1, 0.2}}, {"s1 g2 .35/.2/.35", s1, 2, [3]float32{0.35, 0.2, 0.35}}, {"s1d g2 .35/.2/.35", s1d, 2, [3]float32{0.35, 0.2, 0.35}}, {"s1 g1 .35/.2/.35", s1, 1, [3]float32{0.35, 0.2, 0.35}}} {
			for _, f := range []float32{1, 0.75, 0.5, 0.25} {
				c := shippedCand()
				c.tu.namedExp = f
				if x.es != nil {
					c.tu.thesGate = x.gate
					c.thes = thesMap(x.es, x.ws[0], x.ws[1], x.ws[2])
				}
				c.name = fmt.Sprintf("thes %s named x%g", x.name, f)
				cands = append(cands, c)
			}
		}
	case "full":
		b, err := os.ReadFile("testdata/thesaurus/wordnet.txt")
		if err != nil {
			t.Fatal(err)
		}
		es, err := parseThesaurus(string(b))
		if err != nil {
			t.Fatal(err)
		}
		g1, g2 := thesMap(es, 0.2, 0.1, 0.2), thesMap(es, 0.35, 0.2, 0.35)
		old := candidates()
		report0 := leaveServersOut(docs, qs, old)
		ma, wa, mp, wp := summary(report0)
		for i, r := range report0 {
			t.Logf("old grid fold %d: %v / para %v (chose %s)", i, r.all, r.para, r.chosen)
		}
		t.Logf("old grid: recall@5 mean %.3f worst %.3f; paraphrases mean %.3f worst %.3f", ma, wa, mp, wp)
		for _, c := range old {
			cands = append(cands, c)
			c1 := c
			c1.tu.thesGate, c1.thes, c1.name = 1, g1, c.name+" thes=g1"
			c2 := c
			c2.tu.thesGate, c2.thes, c2.name = 2, g2, c.name+" thes=g2"
			cands = append(cands, c1, c2)
		}
	case "docexp":
		for _, path := range []string{"/tmp/thes/s1.txt", "/tmp/thes/s1d.txt", "/tmp/thes/s2da.txt"} {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			es, err := parseThesaurus(string(b))
			if err != nil {
				t.Fatal(err)
			}
			for _, kinds := range [][3]float32{{1, 1, 1}, {1, 0, 1}, {1, 0, 0}, {0, 0, 1}} {
				m := thesMap(es, kinds[0], kinds[1], kinds[2])
				for _, w := range []float32{0.2, 0.35, 0.5} {
					c := shippedCand()
					c.tu.docExp = w
					c.docThes = m
					c.name = fmt.Sprintf("docexp %s kinds=%v w=%g", path[strings.LastIndex(path, "/")+1:], kinds, w)
					cands = append(cands, c)
				}
			}
		}
	case "thes":
		paths := os.Getenv("TOOLSEARCH_THES")
		if paths == "" {
			paths = "testdata/thesaurus/wordnet.txt"
		}
		for _, path := range strings.Split(paths, ",") {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			es, err := parseThesaurus(string(b))
			if err != nil {
				t.Fatal(err)
			}
			for _, gate := range []uint8{1, 2} {
				for _, ws := range [][3]float32{{0.2, 0.1, 0.2}, {0.35, 0.2, 0.35}, {0.5, 0.3, 0.5}, {0.35, 0, 0.35}} {
					c := shippedCand()
					c.tu.thesTarget = os.Getenv("TOOLSEARCH_TARGET") != ""
					c.tu.thesGate = gate
					c.thes = thesMap(es, ws[0], ws[1], ws[2])
					c.name = fmt.Sprintf("thes %s gate=%d syn/hyper/derived=%v", path[strings.LastIndex(path, "/")+1:], gate, ws)
					cands = append(cands, c)
				}
			}
		}
	}
	report := func(label string, rs []foldResult) {
		ma, wa, mp, wp := summary(rs)
		for i, r := range rs {
			t.Logf("%s fold %d: %v / para %v (chose %s)", label, i, r.all, r.para, r.chosen)
		}
		t.Logf("%s: recall@5 mean %.3f worst %.3f; paraphrases mean %.3f worst %.3f", label, ma, wa, mp, wp)
	}
	report("shipped", leaveServersOut(docs, qs, []candidate{shippedCand()}))
	if one := os.Getenv("TOOLSEARCH_EXP_EACH"); one != "" {
		for _, c := range cands {
			if strings.Contains(c.name, one) || one == "all" {
				rs := leaveServersOut(docs, qs, []candidate{c})
				ma, wa, mp, wp := summary(rs)
				t.Logf("fixed %-50s mean %.3f worst %.3f; para mean %.3f worst %.3f", c.name, ma, wa, mp, wp)
			}
		}
	}
	report("chosen", leaveServersOut(docs, qs, append([]candidate{shippedCand()}, cands...)))
}

func TestExplain(t *testing.T) {
	q := os.Getenv("TOOLSEARCH_Q")
	if q == "" {
		t.Skip("TOOLSEARCH_Q unset")
	}
	docs := loadCatalog(t)
	ix := New(nil)
	if os.Getenv("TOOLSEARCH_QTHES") != "" {
		b, _ := os.ReadFile("testdata/thesaurus/wordnet.txt")
		es, _ := parseThesaurus(string(b))
		c := shippedCand()
		c.tu.thesGate = 1
		c.thes = thesMap(es, 0.2, 0.1, 0.2)
		ix = c.index(docs)
	}
	ix.ReplaceAll(docs)
	pq, err := ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	s := ix.cur.Load()
	qts, counted := ix.queryTerms(s, pq)
	t.Logf("words %v kinds %v action %v hints %v counted %b", pq.words, pq.kind, pq.action, pq.hints, counted)
	for _, qt := range qts {
		df := 0
		for _, h := range s.terms[qt.term] {
			df += len(h.ps)
		}
		t.Logf("  term %-14s w=%.2f words=%b df=%d", qt.term, qt.w, qt.words, df)
	}
	hits := ix.Search(q, 40, nil)
	for i, h := range hits {
		t.Logf("%2d %-50s %.3f", i+1, h.Name, h.Score)
	}
}

// fusedCand is a candidate whose ranking is the reciprocal-rank fusion of
// several indexes' rankings.
func TestFusion(t *testing.T) {
	if os.Getenv("TOOLSEARCH_FUSION") == "" {
		t.Skip("TOOLSEARCH_FUSION unset")
	}
	docs := loadCatalog(t)
	qs := loadQueries(t)
	folds := serverFolds(docs, qs)
	mk := func(c candidate) *Index { return c.index(docs) }
	base := mk(shippedCand())
	plainC := candidate{name: "plain", plain: true}
	noexp := shippedCand()
	noexp.tu.synonym, noexp.tu.domain = 0, 0
	noadj := shippedCand()
	noadj.tu.conflict, noadj.tu.server = 1, 0
	others := map[string]*Index{"plain": mk(plainC), "noexp": mk(noexp), "noadj": mk(noadj)}
	rank := func(ix *Index, q string) []string {
		var out []string
		for _, h := range ix.Search(q, 30, nil) {
			out = append(out, h.Name)
		}
		return out
	}
	for name, other := range others {
		for _, k := range []float64{5, 20, 60} {
			for _, w := range []float64{0.3, 0.5, 1} {
				fused := func(q string) []string {
					sc := map[string]float64{}
					for i, n := range rank(base, q) {
						sc[n] += 1 / (k + float64(i+1))
					}
					for i, n := range rank(other, q) {
						sc[n] += w / (k + float64(i+1))
					}
					var ns []string
					for n := range sc {
						ns = append(ns, n)
					}
					slices.SortFunc(ns, func(a, b string) int {
						if sc[a] != sc[b] {
							if sc[a] > sc[b] {
								return -1
							}
							return 1
						}
						return strings.Compare(a, b)
					})
					return ns[:min(10, len(ns))]
				}
				var worst, mean, worstP, meanP float64 = 1, 0, 1, 0
				for _, f := range folds {
					_, testQs := within(docs, qs, f)
					for i := range testQs {
						testQs[i].Tools = qs[slices.IndexFunc(qs, func(q benchQuery) bool { return q.Query == testQs[i].Query })].Tools
					}
					a, p := evaluateRanked(testQs, []string{"fold"}, fused)
					worst, worstP = min(worst, a.recall5), min(worstP, p.recall5)
					mean += a.recall5 / float64(len(folds))
					meanP += p.recall5 / float64(len(folds))
				}
				t.Logf("fuse %-6s k=%g w=%g: mean %.3f worst %.3f; para mean %.3f worst %.3f", name, k, w, mean, worst, meanP, worstP)
			}
		}
	}
}

func TestMissRanks(t *testing.T) {
	if os.Getenv("TOOLSEARCH_RANKS") == "" {
		t.Skip("TOOLSEARCH_RANKS unset")
	}
	docs := loadCatalog(t)
	qs := loadQueries(t)
	ix := New(nil)
	ix.ReplaceAll(docs)
	hist := map[string]int{}
	for _, q := range qs {
		hits := ix.Search(q.Query, 600, nil)
		r := slices.IndexFunc(hits, func(h Hit) bool { return slices.Contains(q.Tools, h.Name) }) + 1
		b := "none"
		switch {
		case r == 0:
		case r <= 5:
			b = "1-5"
		case r <= 10:
			b = "6-10"
		case r <= 20:
			b = "11-20"
		case r <= 50:
			b = "21-50"
		default:
			b = "51+"
		}
		hist[b]++
		if r > 5 || r == 0 {
			t.Logf("%3d para=%v %q %v", r, q.Paraphrase, q.Query, q.Tools)
		}
	}
	t.Logf("%v", hist)
}

func TestDiff(t *testing.T) {
	if os.Getenv("TOOLSEARCH_DIFF") == "" {
		t.Skip("TOOLSEARCH_DIFF unset")
	}
	docs := loadCatalog(t)
	qs := loadQueries(t)
	b, err := os.ReadFile("testdata/thesaurus/wordnet.txt")
	if err != nil {
		t.Fatal(err)
	}
	es, err := parseThesaurus(string(b))
	if err != nil {
		t.Fatal(err)
	}
	c := shippedCand()
	c.tu.thesGate = 1
	c.thes = thesMap(es, 0.2, 0.1, 0.2)
	var nf float32 = 0.25
	fmt.Sscan(os.Getenv("TOOLSEARCH_DIFF"), &nf)
	c.tu.namedExp = nf
	a, bx := shippedCand().index(docs), c.index(docs)
	in5 := func(ix *Index, q benchQuery) int {
		hits := ix.Search(q.Query, 50, nil)
		return slices.IndexFunc(hits, func(h Hit) bool { return slices.Contains(q.Tools, h.Name) }) + 1
	}
	for _, q := range qs {
		ra, rb := in5(a, q), in5(bx, q)
		ok := func(r int) bool { return r >= 1 && r <= 5 }
		if ok(ra) != ok(rb) {
			t.Logf("%d -> %d para=%v %q %v", ra, rb, q.Paraphrase, q.Query, q.Tools)
		}
	}
}

// BenchmarkSearchVariant is BenchmarkSearch for the experiments'
// variants (TOOLSEARCH_BENCH: base, prf, thes).
func BenchmarkSearchVariant(b *testing.B) {
	c := shippedCand()
	switch os.Getenv("TOOLSEARCH_BENCH") {
	case "prf":
		c.tu.prfK, c.tu.prfTerms, c.tu.prfW, c.tu.prfIDF = 5, 10, 0.2, true
	case "thes":
		raw, err := os.ReadFile("testdata/thesaurus/wordnet.txt")
		if err != nil {
			b.Fatal(err)
		}
		es, err := parseThesaurus(string(raw))
		if err != nil {
			b.Fatal(err)
		}
		c.tu.thesGate, c.thes = 1, thesMap(es, 0.2, 0.1, 0.2)
	}
	ix := c.index(synthetic(b, 10000))
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

func TestDiversify(t *testing.T) {
	if os.Getenv("TOOLSEARCH_DIV") == "" {
		t.Skip("TOOLSEARCH_DIV unset")
	}
	docs := loadCatalog(t)
	qs := loadQueries(t)
	folds := serverFolds(docs, qs)
	ix := shippedCand().index(docs)
	for _, capN := range []int{1, 2, 3, 4, 5} {
		for _, window := range []int{5, 10} {
			rank := func(q string) []string {
				hits := ix.Search(q, 40, nil)
				var out, rest []string
				per := map[string]int{}
				for _, h := range hits {
					srv := serverOf(h.Name)
					if len(out) < window && per[srv] >= capN {
						rest = append(rest, h.Name)
						continue
					}
					per[srv]++
					out = append(out, h.Name)
				}
				out = append(out[:min(len(out), window)], append(rest, out[min(len(out), window):]...)...)
				return out[:min(10, len(out))]
			}
			var worst, mean, worstP, meanP float64 = 1, 0, 1, 0
			for _, f := range folds {
				_, testQs := within(docs, qs, f)
				for i := range testQs {
					testQs[i].Tools = qs[slices.IndexFunc(qs, func(q benchQuery) bool { return q.Query == testQs[i].Query })].Tools
				}
				a, p := evaluateRanked(testQs, []string{"fold"}, rank)
				worst, worstP = min(worst, a.recall5), min(worstP, p.recall5)
				mean += a.recall5 / float64(len(folds))
				meanP += p.recall5 / float64(len(folds))
			}
			t.Logf("cap %d per server in the top %d: mean %.3f worst %.3f; para mean %.3f worst %.3f", capN, window, mean, worst, meanP, worstP)
		}
	}
}
