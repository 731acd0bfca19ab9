package toolsearch

import (
	"os"
	"testing"
)

// TestTuning prints the development set's figures for variants of the
// ranking (set TOOLSEARCH_TUNE=1): how each technique was measured.
func TestTuning(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("set TOOLSEARCH_TUNE=1 to measure the ranking's variants")
	}
	docs := loadCatalog(t)
	qs := loadQueries(t)
	set := os.Getenv("TOOLSEARCH_TUNE_SET")
	if set == "" {
		set = "dev"
	}
	base := defaultTuning
	variants := []struct {
		name string
		tu   tuning
	}{
		{"default", base},
		{"no wordnet", func() tuning { t := base; t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0; return t }()},
		{"no domain", func() tuning { t := base; t.domain = 0; return t }()},
		{"no domain, no wordnet", func() tuning { t := base; t.domain, t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0, 0; return t }()},
		{"domain 0.35", func() tuning { t := base; t.domain = 0.35; return t }()},
		{"domain 0.7", func() tuning { t := base; t.domain = 0.7; return t }()},
		{"domain 0.7 no wn", func() tuning { t := base; t.domain = 0.7; t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0; return t }()},
		{"coordMin 0.3", func() tuning { t := base; t.coordMin = 0.3; return t }()},
		{"coordMin 0.3 no wn", func() tuning { t := base; t.coordMin = 0.3; t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0; return t }()},
		{"coordMin 0.2 wn .1", func() tuning {
			t := base
			t.coordMin = 0.2
			t.wnSynonym, t.wnHypernym, t.wnDerived = 0.1, 0.1, 0.1
			return t
		}()},
		{"wn .1", func() tuning { t := base; t.wnSynonym, t.wnHypernym, t.wnDerived = 0.1, 0.1, 0.1; return t }()},
		{"prf 3/5/.2 no wn", func() tuning {
			t := base
			t.prfDocs, t.prfTerms, t.prfWeight = 3, 5, 0.2
			t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0
			return t
		}()},
		{"prf 3/10/.3 no wn", func() tuning {
			t := base
			t.prfDocs, t.prfTerms, t.prfWeight = 3, 10, 0.3
			t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0
			return t
		}()},
		{"prf 5/10/.2 no wn", func() tuning {
			t := base
			t.prfDocs, t.prfTerms, t.prfWeight = 5, 10, 0.2
			t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0
			return t
		}()},
		{"prf 2/5/.1 no wn", func() tuning {
			t := base
			t.prfDocs, t.prfTerms, t.prfWeight = 2, 5, 0.1
			t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0
			return t
		}()},
		{"prf 10/20/.3 no wn", func() tuning {
			t := base
			t.prfDocs, t.prfTerms, t.prfWeight = 10, 20, 0.3
			t.wnSynonym, t.wnHypernym, t.wnDerived = 0, 0, 0
			return t
		}()},
		{"wn syn only", func() tuning { t := base; t.wnHypernym, t.wnDerived = 0, 0; return t }()},
		{"wn hyper only", func() tuning { t := base; t.wnSynonym, t.wnDerived = 0, 0; return t }()},
		{"wn derived only", func() tuning { t := base; t.wnSynonym, t.wnHypernym = 0, 0; return t }()},
	}
	for _, v := range variants {
		ix := newIndex(nil, &v.tu)
		ix.ReplaceAll(docs)
		a, p := evaluate(ix, qs, set)
		t.Logf("%-22s all: %v | para: %v", v.name, a, p)
	}
}
