package toolsearch

import (
	"container/heap"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Ranking defaults (BM25F). They were chosen by a grid search on the
// development set of the benchmark in testdata (TestQuality), where the
// figures are flat around them (recall@5 within 0.02 over k1 0.6-1.6, b
// 0.3-0.75): k1 saturates a word's weight early, as a tool's text is short
// and a word said twice is hardly more relevant; b normalizes lengths only
// partly, since a long description is more often thorough than off-topic;
// a word of a tool's name counts half again as much as one of its title or
// description, its parameters' and its server's words less.
const (
	DefaultK1 = 0.6
	DefaultB  = 0.5
	// DefaultLimit is the number of hits a search returns when its limit
	// is not positive.
	DefaultLimit = 10
	// DefaultSemanticWeight is the share of a model's similarity in a
	// re-ranked score.
	DefaultSemanticWeight = 0.5
	// semanticCandidates is how many of the lexical ranking's best tools a
	// model re-ranks, at least (three times the limit, when more).
	semanticCandidates = 30
	// minServerPrefix is the length of the shortest word of a request
	// that stands for a server's name it starts ("mongo" for mongodb),
	// when it is more than half of that name ("post" is not postgres,
	// "file" not filesystem).
	minServerPrefix = 4
	// coordTableBits is how many of a request's first words coordination
	// keeps a table of the weights of their sets for (see adjust).
	coordTableBits = 10
)

// tuning holds the weights of query expansions, relative to a word of the
// query itself, and the coordination exponent: the knobs the benchmark's
// TestTuning measures.
type tuning struct {
	synonym      float32 // "remove" for "delete": related, not the same
	domain       float32 // "ticket" for "issue": a software or business word for the same thing
	abbreviation float32 // "pull request" for "PR": the same thing
	coord        float64 // how much matching more of a query's words counts
	value        float32 // a word of an argument value ("Berlin", a URL's words): it says little of the tool
	hint         float32 // the word a value stands for ("url" for a URL)
	joint        bool    // saturate the fields' weighted sum once (classic BM25F), not each field
	conflict     float32 // the factor of a tool whose name's action is not the request's (1: none)
	server       float32 // how much a tool's score grows with its server's match of the request (0: none)
}

// defaultTuning is the tuning of New. The domain weight sits between a
// verb synonym's and an abbreviation's: the dev set's recall@5 is flat
// over 0.4-0.6. A tool whose name's action conflicts with the request's
// keeps a quarter of its score, and a tool's score grows up to 3x with
// its server's match of the request: on their training servers the
// leave-servers-out folds choose a factor of 0.25 or 0.5, never 1, and
// most of them the server's match (TestLeaveServersOut).
var defaultTuning = tuning{synonym: 0.35, domain: 0.5, abbreviation: 0.8, coord: 1.0, value: 0.3, hint: 0.3, conflict: 0.25, server: 2}

// DefaultWeights returns the default field weights.
func DefaultWeights() Weights {
	return Weights{Name: 1.5, Title: 1, Description: 1, Params: 0.4, Server: 0.3}
}

// DefaultFieldK1 returns the default term-frequency saturation of each
// field: a word said twice in a name or a title is hardly more relevant; in
// a description or the parameters, a little more.
func DefaultFieldK1() Weights {
	return Weights{Name: 0.6, Title: 0.6, Description: 1.2, Params: 1.2, Server: 0.6}
}

// DefaultFieldB returns the default length normalization of each field:
// none for a server's name (all of its tools share it), some for a tool's
// name, most for the long fields, so that a word of a long description
// counts less than the same word of a short one.
func DefaultFieldB() Weights {
	return Weights{Name: 0.3, Title: 0.5, Description: 0.75, Params: 0.75, Server: 0}
}

// Weights are the BM25F weights of a tool's fields: how much a word found
// in one counts relative to the others.
type Weights struct {
	Name        float64 // the tool's name, without its server prefix
	Title       float64
	Description float64
	Params      float64 // parameter names and descriptions
	Server      float64 // the server's name and its plugin's description
}

// Options configure an Index. The zero value, like a nil *Options, means
// the defaults.
type Options struct {
	// K1 and B are BM25's term-frequency saturation and length
	// normalization of a Plain index; zero means DefaultK1 and DefaultB.
	// Given for an index that is not plain, and FieldK1 or FieldB not
	// given, they are every field's.
	K1, B float64
	// FieldK1 and FieldB are the saturation and length normalization of
	// each field: a word's frequency saturates, and is normalized by the
	// field's length relative to its average, field by field, before the
	// fields are weighed and added, so that a description that repeats a
	// word cannot outweigh a name that says it once. Nil means
	// DefaultFieldK1 and DefaultFieldB (or K1 and B, when given).
	FieldK1, FieldB *Weights
	// Weights are the field weights; nil means DefaultWeights.
	Weights *Weights
	// Model, when set, re-ranks the lexical ranking's best candidates by
	// the cosine similarity of the request's and each tool's vectors (see
	// LoadModel): a tool's vector is computed once, when it is indexed.
	Model *Model
	// SemanticWeight is the share of the model's similarity in a
	// re-ranked score, the rest being the lexical score relative to the
	// best candidate's; zero means DefaultSemanticWeight.
	SemanticWeight float64
	// Plain makes the index plain BM25 over the same words: no stemming, no
	// synonyms, no abbreviations, every field of weight 1. It is the
	// baseline the benchmark compares with.
	Plain bool
}

// An Index is a search index over tool documents, kept per server.
// Searches run concurrently with each other and with Replace; each search
// sees the index before or after a Replace, never half of one.
type Index struct {
	k1, b   float32
	weights [numFields]float32
	fk1     [numFields]float32 // per-field saturation
	fb      [numFields]float32 // per-field length normalization
	wk      [numFields]float32 // weight × (k1 + 1), per field
	tu      tuning
	model   *Model
	alpha   float32 // the semantic weight
	plain   bool
	expand  map[string][]wterm // query word's stem → expansions

	mu  sync.Mutex // serializes writers
	cur atomic.Pointer[snapshot]

	accs sync.Pool // *scratch
}

// scratch is a search's working memory, reused through Index.accs.
type scratch struct {
	acc   []float32 // score per flat document number
	srv   []float32 // score per slot: how much of the request its server's tools say
	words []uint32  // the query words each document matched
}

// A Hit is one result of a search.
type Hit struct {
	Name  string
	Score float64
}

type field uint8

const (
	fieldName field = iota
	fieldTitle
	fieldDescription
	fieldParams
	fieldServer
	numFields
)

// wterm is a term with a weight and, in a query, the words it stands for
// (bit i for the query's word i).
type wterm struct {
	term  string
	w     float32
	words uint32
}

// posting is one document's occurrences of a term, per field.
type posting struct {
	doc int32
	tf  [numFields]float32
}

// segment is one server's documents.
type segment struct {
	server   string
	names    []string
	lens     [][numFields]float32
	postings map[string][]posting
	vecs     [][]float32 // each tool's vector, with a model
	acts     []action    // each tool's name's action
}

// snapshot is an immutable state of the index. Each server's segment has
// a slot that it keeps while it is replaced; a removed server's slot is
// reused by the next new one, so a Replace changes only the term lists of
// the terms its server had or has.
type snapshot struct {
	slots    []*segment        // nil: a free slot
	slotOf   map[string]int32  // server → slot
	terms    map[string][]hold // term → the slots that hold it, with their postings
	base     []int32           // slot → its first flat document number
	names    []string          // flat document number → name
	vecs     [][]float32       // flat document number → vector, with a model
	acts     []action          // flat document number → its name's action
	srvWords []string          // the words of the servers' names, sorted, each once
	norm     [][numFields]float32
	n        int
	lens     [numFields]float64 // total length of each field
}

// hold is one slot's postings of a term.
type hold struct {
	slot int32
	ps   []posting
}

// New returns an empty index.
func New(opts *Options) *Index {
	return newIndex(opts, defaultTuning)
}

// newIndex returns an empty index with a tuning.
func newIndex(opts *Options, tu tuning) *Index {
	var o Options
	if opts != nil {
		o = *opts
	}
	fk1, fb := DefaultFieldK1(), DefaultFieldB()
	if o.K1 > 0 {
		fk1 = Weights{o.K1, o.K1, o.K1, o.K1, o.K1}
	}
	if o.B > 0 && o.B <= 1 {
		fb = Weights{o.B, o.B, o.B, o.B, o.B}
	}
	if o.FieldK1 != nil {
		fk1 = *o.FieldK1
	}
	if o.FieldB != nil {
		fb = *o.FieldB
	}
	if o.K1 <= 0 {
		o.K1 = DefaultK1
	}
	if o.B <= 0 || o.B > 1 {
		o.B = DefaultB
	}
	w := DefaultWeights()
	if o.Weights != nil {
		w = *o.Weights
	}
	if o.Plain {
		w = Weights{1, 1, 1, 1, 1}
	}
	ix := &Index{
		k1:      float32(o.K1),
		b:       float32(o.B),
		weights: [numFields]float32{float32(w.Name), float32(w.Title), float32(w.Description), float32(w.Params), float32(w.Server)},
		plain:   o.Plain,
		tu:      tu,
		model:   o.Model,
		alpha:   float32(o.SemanticWeight),
	}
	if ix.alpha <= 0 || ix.alpha > 1 {
		ix.alpha = DefaultSemanticWeight
	}
	for f, v := range [numFields]float64{fk1.Name, fk1.Title, fk1.Description, fk1.Params, fk1.Server} {
		ix.fk1[f] = float32(max(v, 0.01))
	}
	for f, v := range [numFields]float64{fb.Name, fb.Title, fb.Description, fb.Params, fb.Server} {
		ix.fb[f] = float32(min(max(v, 0), 1))
	}
	for f := range ix.wk {
		ix.wk[f] = ix.weights[f] * (ix.fk1[f] + 1)
	}
	if !o.Plain {
		ix.expand = expansions(tu)
	}
	ix.cur.Store(ix.snapshot(nil, map[string]int32{}, map[string][]hold{}, [numFields]float64{}))
	return ix
}

// expansions builds the query expansions of the tables: each member of a
// verb or noun group gives the others at the synonym weight, each member
// of a domain group the others at the domain weight, each abbreviation
// its words at the abbreviation weight. Keys and terms are stems; a term
// reached two ways keeps the higher weight.
func expansions(tu tuning) map[string][]wterm {
	m := map[string][]wterm{}
	add := func(key, term string, w float32) {
		if key == term || w <= 0 {
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
	for _, groups := range [][][]string{verbGroups, nounGroups} {
		for _, g := range groups {
			for _, a := range g {
				for _, b := range g {
					add(stem(a), stem(b), tu.synonym)
				}
			}
		}
	}
	for _, g := range domainGroups {
		for _, a := range g {
			for _, b := range g {
				add(stem(a), stem(b), tu.domain)
			}
		}
	}
	for abbr, ws := range abbreviations {
		for _, w := range ws {
			add(stem(abbr), stem(w), tu.abbreviation)
		}
	}
	return m
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int { return ix.cur.Load().n }

// Replace replaces the documents of one server at once: afterwards the
// index holds docs for server and whatever it held for the others. An
// empty docs removes the server. The documents are indexed under server
// whatever their Server field says (an empty Server field is server).
func (ix *Index) Replace(server string, docs []Doc) {
	var seg *segment
	if len(docs) > 0 {
		seg = ix.segment(server, docs)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.cur.Load()
	slot, had := old.slotOf[server]
	if !had && seg == nil {
		return
	}
	slots := slices.Clone(old.slots)
	slotOf := make(map[string]int32, len(old.slotOf)+1)
	for k, v := range old.slotOf {
		slotOf[k] = v
	}
	terms := make(map[string][]hold, len(old.terms)+64)
	for k, v := range old.terms {
		terms[k] = v
	}
	lens := old.lens
	if had {
		prev := slots[slot]
		for t := range prev.postings {
			terms[t] = without(terms[t], slot)
			if len(terms[t]) == 0 {
				delete(terms, t)
			}
		}
		for _, l := range prev.lens {
			for f := range l {
				lens[f] -= float64(l[f])
			}
		}
		slots[slot] = nil
		delete(slotOf, server)
	}
	if seg != nil {
		if !had {
			slot = int32(slices.Index(slots, nil))
			if slot < 0 {
				slot = int32(len(slots))
				slots = append(slots, nil)
			}
		}
		slots[slot] = seg
		slotOf[server] = slot
		for t, ps := range seg.postings {
			terms[t] = append(without(terms[t], slot), hold{slot, ps})
		}
		for _, l := range seg.lens {
			for f := range l {
				lens[f] += float64(l[f])
			}
		}
	}
	ix.cur.Store(ix.snapshot(slots, slotOf, terms, lens))
}

// without returns hs without slot's entry, as a new slice.
func without(hs []hold, slot int32) []hold {
	out := make([]hold, 0, len(hs)+1)
	for _, h := range hs {
		if h.slot != slot {
			out = append(out, h)
		}
	}
	return out
}

// ReplaceAll replaces the whole index with docs, grouped by their Server
// field: the way to build an index at once.
func (ix *Index) ReplaceAll(docs []Doc) {
	byServer := map[string][]Doc{}
	var servers []string
	for _, d := range docs {
		if _, ok := byServer[d.Server]; !ok {
			servers = append(servers, d.Server)
		}
		byServer[d.Server] = append(byServer[d.Server], d)
	}
	slots := make([]*segment, len(servers))
	slotOf := make(map[string]int32, len(servers))
	terms := map[string][]hold{}
	var lens [numFields]float64
	for i, server := range servers {
		seg := ix.segment(server, byServer[server])
		slots[i], slotOf[server] = seg, int32(i)
		for t, ps := range seg.postings {
			terms[t] = append(terms[t], hold{int32(i), ps})
		}
		for _, l := range seg.lens {
			for f := range l {
				lens[f] += float64(l[f])
			}
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.cur.Store(ix.snapshot(slots, slotOf, terms, lens))
}

// snapshot assembles a snapshot: the flat document numbers and each
// document's field normalization, which depends on the average field
// lengths of the whole index.
func (ix *Index) snapshot(slots []*segment, slotOf map[string]int32, terms map[string][]hold, lens [numFields]float64) *snapshot {
	s := &snapshot{slots: slots, slotOf: slotOf, terms: terms, lens: lens}
	for _, seg := range slots {
		if seg != nil {
			s.n += len(seg.names)
		}
	}
	var avg [numFields]float32
	for f := range avg {
		if s.n > 0 {
			avg[f] = float32(lens[f] / float64(s.n))
		}
	}
	for _, seg := range slots {
		if seg != nil {
			for _, w := range words(nil, seg.server) {
				if i, found := slices.BinarySearch(s.srvWords, w); !found {
					s.srvWords = slices.Insert(s.srvWords, i, w)
				}
			}
		}
	}
	s.base = make([]int32, len(slots))
	s.names = make([]string, 0, s.n)
	s.norm = make([][numFields]float32, 0, s.n)
	for i, seg := range slots {
		s.base[i] = int32(len(s.names))
		if seg == nil {
			continue
		}
		s.names = append(s.names, seg.names...)
		s.acts = append(s.acts, seg.acts...)
		if ix.model != nil {
			s.vecs = append(s.vecs, seg.vecs...)
		}
		for _, l := range seg.lens {
			var nm [numFields]float32
			for f := range nm {
				if ix.plain || ix.tu.joint {
					// One saturation over the fields' normalized sum.
					denom := 1 - ix.b
					if avg[f] > 0 {
						denom += ix.b * l[f] / avg[f]
					}
					nm[f] = ix.weights[f] / denom
					continue
				}
				// Each field's own saturation: K = k1 (1 - b + b len/avg).
				rel := float32(1)
				if avg[f] > 0 {
					rel = l[f] / avg[f]
				}
				nm[f] = ix.fk1[f] * (1 - ix.fb[f] + ix.fb[f]*rel)
			}
			s.norm = append(s.norm, nm)
		}
	}
	return s
}

// segment indexes one server's documents.
func (ix *Index) segment(server string, docs []Doc) *segment {
	seg := &segment{
		server:   server,
		names:    make([]string, len(docs)),
		acts:     make([]action, len(docs)),
		lens:     make([][numFields]float32, len(docs)),
		postings: map[string][]posting{},
	}
	tf := map[string]*[numFields]float32{}
	var buf []string
	for i, d := range docs {
		seg.names[i] = d.Name
		srv := d.Server
		if srv == "" {
			srv = server
		}
		clear(tf)
		count := func(f field, text string) {
			buf = ix.terms(buf[:0], text)
			for _, t := range buf {
				c := tf[t]
				if c == nil {
					c = new([numFields]float32)
					tf[t] = c
				}
				c[f]++
			}
			seg.lens[i][f] += float32(len(buf))
		}
		count(fieldName, strings.TrimPrefix(d.Name, srv+"__"))
		seg.acts[i] = nameAction(words(buf[:0], strings.TrimPrefix(d.Name, srv+"__")))
		count(fieldTitle, d.Title)
		count(fieldDescription, d.Description)
		for _, p := range d.Params {
			count(fieldParams, p.Name)
			count(fieldParams, p.Description)
		}
		count(fieldServer, srv)
		count(fieldServer, d.PluginDescription)
		for t, c := range tf {
			seg.postings[t] = append(seg.postings[t], posting{doc: int32(i), tf: *c})
		}
		if ix.model != nil {
			name := strings.Join(words(nil, strings.TrimPrefix(d.Name, srv+"__")), " ")
			seg.vecs = append(seg.vecs, ix.model.Embed(name+". "+d.Title+". "+d.Description))
		}
	}
	return seg
}

// terms appends the index terms of a text: its words without common ones,
// stemmed, with abbreviations expanded (unless the index is plain).
func (ix *Index) terms(dst []string, text string) []string {
	start := len(dst)
	dst = words(dst, text)
	out := dst[:start]
	for _, w := range dst[start:] {
		if _, stop := stopWords[w]; stop {
			continue
		}
		if ix.plain {
			out = append(out, w)
			continue
		}
		out = append(out, stem(w))
		for _, e := range abbreviations[w] {
			out = append(out, stem(e))
		}
	}
	return out
}

// queryTerms expands a query's words into weighted terms, and returns
// the bits of the words that count for coordination: not those of values,
// unless the query is only values.
func (ix *Index) queryTerms(s *snapshot, q *Query) ([]wterm, uint32) {
	var ts []wterm
	add := func(t string, w float32, words uint32) {
		for i := range ts {
			if ts[i].term == t {
				ts[i].w = max(ts[i].w, w)
				ts[i].words |= words
				return
			}
		}
		ts = append(ts, wterm{term: t, w: w, words: words})
	}
	var counted uint32
	for i, w := range q.words {
		bit := uint32(1) << i
		if ix.plain {
			add(w, 1, bit)
			counted |= bit
			continue
		}
		st := stem(w)
		weight := float32(1)
		switch q.kind[i] {
		case hardValue:
			weight = ix.tu.value
		case softValue:
			if !s.named(st) {
				weight = ix.tu.value
			}
		}
		if weight == 1 {
			counted |= bit
		}
		add(st, weight, bit)
		if q.kind[i] != hardValue && len(w) >= minServerPrefix {
			// A server's short name ("mongo" for mongodb, "todo" for
			// todoist: more than half of it) is its name.
			j, _ := slices.BinarySearch(s.srvWords, w)
			for ; j < len(s.srvWords) && strings.HasPrefix(s.srvWords[j], w); j++ {
				if sw := s.srvWords[j]; sw != w && 2*len(w) > len(sw) {
					add(stem(sw), weight, bit)
				}
			}
		}
		for _, e := range ix.expand[st] {
			add(e.term, e.w*weight, bit)
		}
		if st != w {
			for _, e := range ix.expand[w] {
				add(e.term, e.w*weight, bit)
			}
		}
	}
	if ix.plain {
		return ts, counted
	}
	// Two words that a tool's text writes as one ("on call", "oncall"),
	// or that the tables know as one ("go to": goto, which navigates;
	// "roll back": rollback), and the one word's expansions.
	for _, p := range q.pairs {
		j := stem(p.joined)
		_, ok := s.terms[j]
		exps := ix.expand[j]
		if !ok && len(exps) == 0 {
			continue
		}
		var bits uint32
		for _, i := range []int{p.a, p.b} {
			if i >= 0 {
				bits |= 1 << i
			}
		}
		if ok {
			add(j, 1, bits)
		}
		for _, e := range exps {
			add(e.term, e.w, bits)
		}
	}
	for _, h := range q.hints {
		add(stem(h), ix.tu.hint, 0)
	}
	if counted == 0 {
		counted = 1<<len(q.words) - 1
	}
	return ts, counted
}

// named says whether a term is in some tool's name or server's name.
func (s *snapshot) named(term string) bool {
	for _, h := range s.terms[term] {
		for _, p := range h.ps {
			if p.tf[fieldName] > 0 || p.tf[fieldServer] > 0 {
				return true
			}
		}
	}
	return false
}

// Search returns up to limit tools that match query, best first (ties by
// name). Only tools whose name allow accepts are ranked, so a caller gets
// as many hits as it may see; a nil allow accepts every tool. A query that
// does not parse (see ParseQuery) finds nothing; a limit that is not
// positive means DefaultLimit.
func (ix *Index) Search(query string, limit int, allow func(name string) bool) []Hit {
	q, err := ParseQuery(query)
	if err != nil {
		return nil
	}
	return ix.SearchQuery(q, limit, allow)
}

// SearchQuery is Search for a parsed query.
func (ix *Index) SearchQuery(q *Query, limit int, allow func(name string) bool) []Hit {
	if limit <= 0 {
		limit = DefaultLimit
	}
	s := ix.cur.Load()
	if s.n == 0 || q == nil {
		return nil
	}
	sc, _ := ix.accs.Get().(*scratch)
	if sc == nil {
		sc = new(scratch)
	}
	defer ix.accs.Put(sc)
	if cap(sc.acc) < s.n {
		sc.acc = make([]float32, s.n)
		sc.words = make([]uint32, s.n)
	}
	acc, matched := sc.acc[:s.n], sc.words[:s.n]
	clear(acc)
	clear(matched)

	n := float64(s.n)
	k1 := ix.k1
	qts, counted := ix.queryTerms(s, q)
	var srv []float32
	if ix.tu.server > 0 && !ix.plain {
		if cap(sc.srv) < len(s.slots) {
			sc.srv = make([]float32, len(s.slots))
		}
		srv = sc.srv[:len(s.slots)]
		clear(srv)
	}
	for _, qt := range qts {
		list := s.terms[qt.term]
		if srv != nil && len(list) > 0 {
			// The servers' own BM25 over their tools: a server many of
			// whose tools say a word that few servers say.
			ns := float64(len(s.slotOf))
			idf := float32(math.Log(1 + (ns-float64(len(list))+0.5)/(float64(len(list))+0.5)))
			for _, h := range list {
				c := float32(len(h.ps))
				srv[h.slot] += qt.w * idf * c / (c + 1)
			}
		}
		var df int
		for _, h := range list {
			df += len(h.ps)
		}
		if df == 0 {
			continue
		}
		idf := float32(math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5)))
		if !ix.plain && !ix.tu.joint {
			wq := qt.w * idf
			wk := &ix.wk
			for _, h := range list {
				base := s.base[h.slot]
				for _, p := range h.ps {
					d := base + p.doc
					nm := &s.norm[d]
					// Every field, without a branch: a field without the
					// word adds 0 (its K is positive).
					sc := wk[0]*p.tf[0]/(p.tf[0]+nm[0]) + wk[1]*p.tf[1]/(p.tf[1]+nm[1]) +
						wk[2]*p.tf[2]/(p.tf[2]+nm[2]) + wk[3]*p.tf[3]/(p.tf[3]+nm[3]) +
						wk[4]*p.tf[4]/(p.tf[4]+nm[4])
					acc[d] += wq * sc
					matched[d] |= qt.words
				}
			}
			continue
		}
		wq := qt.w * idf * (k1 + 1)
		for _, h := range list {
			base := s.base[h.slot]
			for _, p := range h.ps {
				d := base + p.doc
				nm := &s.norm[d]
				var tf float32
				for f := range p.tf {
					tf += p.tf[f] * nm[f]
				}
				acc[d] += wq * tf / (tf + k1)
				matched[d] |= qt.words
			}
		}
	}
	if !ix.plain {
		// Each word of the request counts for coordination by how rare it
		// is among the tools (its stem's IDF): a tool that matches a rare
		// word of the request and misses a common one ranks above one that
		// matches the common one and misses the rare one.
		var widf [MaxQueryWords]float32
		for i, w := range q.words {
			var df int
			for _, h := range s.terms[stem(w)] {
				df += len(h.ps)
			}
			widf[i] = float32(math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5)))
		}
		ix.adjust(s, q, acc, matched, counted, srv, &widf)
	}
	if ix.model == nil {
		return topHits(acc, s.names, limit, allow)
	}
	return ix.rerank(s, q, topScored(acc, s.names, max(semanticCandidates, 3*limit), allow), limit)
}

// adjust applies to a search's scores, in one pass, what depends on more
// than one word of the request: its server's match, its action, and
// coordination (widf: each word's weight in it).
func (ix *Index) adjust(s *snapshot, q *Query, acc []float32, matched []uint32, counted uint32, srv []float32, widf *[MaxQueryWords]float32) {
	// Coordination: a tool that matches more of the request's words
	// ranks above one that matches a single word many times, each word
	// counting by its IDF (a tool that says "incidents" matches more of
	// "any open incidents right now" than one that says "now" and
	// "open"). Values do not count: a tool is not better for matching a
	// URL's words.
	coordOn := bits.OnesCount32(counted) > 1
	var all float32
	for c := counted; c != 0; c &= c - 1 {
		all += widf[bits.TrailingZeros32(c)]
	}
	if all <= 0 {
		coordOn = false
	}
	// The weight of every set of the first words, when the counted words
	// are among them (most requests): one look-up a tool, as a count of
	// words was.
	var sums [1 << coordTableBits]float32
	table := counted < 1<<coordTableBits
	if coordOn && table {
		for m := uint32(1); m <= counted; m++ {
			sums[m] = sums[m&(m-1)] + widf[bits.TrailingZeros32(m)]
		}
	}
	// A tool whose name does another thing than the request asks (it
	// creates when the request asks to read) ranks lower, whatever words
	// it shares with the request; one that creates when the request
	// updates, or updates when it creates, half as much (in the
	// factor's square root): both write, and adding a paragraph to a
	// note is an update of the note.
	conflict := ix.tu.conflict
	if q.action == noAction {
		conflict = 1
	}
	writes := float32(math.Sqrt(float64(conflict)))
	// A tool of a server whose tools say the request's words ranks above
	// one of a server that says them once: "pods" and "namespace" are
	// said by a Kubernetes server's other tools.
	var best float32
	if srv != nil {
		best = slices.Max(srv)
	}
	if !coordOn && conflict == 1 && best <= 0 {
		return
	}
	for slot, seg := range s.slots {
		if seg == nil {
			continue
		}
		f := float32(1)
		if best > 0 {
			f = 1 + ix.tu.server*srv[slot]/best
		}
		base := s.base[slot]
		for d := base; d < base+int32(len(seg.names)); d++ {
			a := acc[d]
			if a <= 0 {
				continue
			}
			a *= f
			if conflict != 1 && s.acts[d] != noAction && s.acts[d] != q.action {
				if bothWrite(s.acts[d], q.action) {
					a *= writes
				} else {
					a *= conflict
				}
			}
			if coordOn {
				var got float32
				if table {
					got = sums[matched[d]&counted]
				} else {
					for m := matched[d] & counted; m != 0; m &= m - 1 {
						got += widf[bits.TrailingZeros32(m)]
					}
				}
				if ix.tu.coord == 1 {
					a *= got / all
				} else {
					a *= float32(math.Pow(float64(got/all), ix.tu.coord))
				}
			}
			acc[d] = a
		}
	}
}

// bothWrite says whether two actions are a create and an update.
func bothWrite(a, b action) bool {
	return a == actCreate && b == actUpdate || a == actUpdate && b == actCreate
}

// rerank orders a lexical ranking's best hits by a mix of their lexical
// score, relative to the best one's, and the cosine similarity of the
// request's vector (of its words that are not values) and theirs.
func (ix *Index) rerank(s *snapshot, q *Query, top []scored, limit int) []Hit {
	hits := make([]Hit, len(top))
	for i, e := range top {
		hits[i] = Hit{Name: s.names[e.doc], Score: float64(e.score)}
	}
	if len(top) == 0 {
		return hits
	}
	var text []string
	for i, w := range q.words {
		if q.kind[i] != hardValue {
			text = append(text, w)
		}
	}
	qv := ix.model.Embed(strings.Join(text, " "))
	if qv == nil {
		return hits[:min(limit, len(hits))]
	}
	best := hits[0].Score
	a := float64(ix.alpha)
	for i, e := range top {
		sim := float64(max(cosine(qv, s.vecs[e.doc]), 0))
		hits[i].Score = (1-a)*hits[i].Score/best + a*sim
	}
	slices.SortStableFunc(hits, func(x, y Hit) int {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return strings.Compare(x.Name, y.Name)
	})
	return hits[:min(limit, len(hits))]
}

// topHits returns the limit best scored documents that allow accepts.
func topHits(acc []float32, names []string, limit int, allow func(string) bool) []Hit {
	top := topScored(acc, names, limit, allow)
	out := make([]Hit, len(top))
	for i, e := range top {
		out[i] = Hit{Name: names[e.doc], Score: float64(e.score)}
	}
	return out
}

// topScored returns the limit best scored documents that allow accepts,
// best first.
func topScored(acc []float32, names []string, limit int, allow func(string) bool) []scored {
	h := &hitHeap{names: names, items: make([]scored, 0, limit+1)}
	for d, sc := range acc {
		if sc <= 0 {
			continue
		}
		if len(h.items) == limit && !better(sc, names[d], h.items[0].score, names[h.items[0].doc]) {
			continue
		}
		if allow != nil && !allow(names[d]) {
			continue
		}
		heap.Push(h, scored{doc: int32(d), score: sc})
		if len(h.items) > limit {
			heap.Pop(h)
		}
	}
	out := make([]scored, len(h.items))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(scored)
	}
	return out
}

// better orders hits: higher score first, then name.
func better(s1 float32, n1 string, s2 float32, n2 string) bool {
	if s1 != s2 {
		return s1 > s2
	}
	return n1 < n2
}

type scored struct {
	doc   int32
	score float32
}

// hitHeap is a min-heap of the best hits so far: its root is the worst.
type hitHeap struct {
	names []string
	items []scored
}

func (h *hitHeap) Len() int { return len(h.items) }
func (h *hitHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return better(b.score, h.names[b.doc], a.score, h.names[a.doc])
}
func (h *hitHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *hitHeap) Push(x any)    { h.items = append(h.items, x.(scored)) }
func (h *hitHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
