// Package toolsearch finds the tools that fit a request among thousands,
// offline and in process: an index of tool documents ranked with BM25F,
// with what plain BM25 misses on tool catalogs.
//
//	ix := toolsearch.New(nil)
//	ix.Replace("github", []toolsearch.Doc{{Name: "github__create_pull_request", Description: "Open new pull request"}})
//	hits := ix.Search("open a PR from my branch", 5, allowed) // []Hit{Name, Score}, best first
//
// A tool's document is its projected name (split into words), title,
// description, parameter names and descriptions (ParamsFromSchema), its
// server's name and its plugin's description. Each is a field of its own
// weight (Weights): a word of the tool's name counts most. Words are split
// at snake_case, camelCase, kebab-case, dots and digits, lowercased, and
// stemmed lightly, so "creates", "created" and "creating" meet. A query's
// words are expanded with the verbs tool names are made of and the words
// users say for them (create/add/new/open/make, delete/remove/destroy,
// list/show/enumerate, get/fetch/read/retrieve, update/edit/modify/set,
// search/find/query/lookup, send/post, run/execute/invoke, ...), a few
// nouns said two ways (folder/directory, ticket/issue), at a lower weight
// so that they add to a match but never outrank the words themselves; with
// the words software, operations and business APIs use for one thing
// (repository/project/codebase, notification/alert, customer/client,
// invoice/bill, channel/room, star/favorite, ...), at a weight between; and
// abbreviations (PR, repo, DB, k8s, env, ...) are expanded in queries and
// documents alike.
//
// The index is kept per server: Replace swaps one server's tools at once
// (a listing, a drift decision, a trust change) and searches running
// meanwhile see the index before or after it. Search ranks only the tools
// a caller may see: its allow function is applied before the cut to the
// limit, so a caller never gets fewer hits because of tools it cannot see,
// and never sees the others.
//
// # Choices
//
//   - In process, not SQLite FTS5. Both were measured on the same catalog
//     (docs/BENCHMARKS.md, "Tool search"): FTS5's bm25() has no query-side
//     term weights, so synonyms can only be added as equals (they then
//     dominate) or not at all, and a search over 10,000 tools costs more
//     than this index's. The index is a few hundred lines with no
//     dependency.
//   - Copy-on-write snapshots, not a read-write lock: a search never waits
//     for a Replace, and a Replace costs one copy of the term statistics.
//   - The tables (stop words, verb, noun and domain groups, abbreviations)
//     are small, generic and in code; they are not tuned to the benchmark's
//     requests, and the benchmark keeps a held-out set to show it.
//   - No general thesaurus and no feedback. A thesaurus derived from
//     WordNet 3.1 (internal/wordnetgen) and RM3-like pseudo-relevance
//     feedback were measured on the benchmark and lift nothing (a
//     general word's senses are not a tool catalog's; a catalog's top
//     hits share their server's words, not the request's): the tests keep
//     the measurement of the first (TestThesaurusMeasured). Measured
//     again in the leave-servers-out folds, gated to the words no tool's
//     name has, and as document expansion, they still lift a request or
//     two at best (docs/BENCHMARKS.md, issue 39's third pass).
//   - An embedding model only if the operator provides one: with
//     Options.Model (LoadModel, a model2vec directory such as
//     potion-base-8M's), the lexical ranking's best candidates are
//     re-ranked by the cosine similarity of mean-pooled token vectors.
//     The safetensors and tokenizer.json readers are in this package, on
//     the standard library; nothing is fetched at run time.
//   - Values in a request are weighed down: the words of a URL, path,
//     e-mail address, quoted text, number or time of day, and a
//     capitalized word no tool's or server's name has, say what to act
//     on, not which tool. Their kind says a little of it: a URL or a
//     domain adds "url", a file name "file", a time of day "time".
//   - Each field saturates on its own (its k1 and b, Options.FieldK1 and
//     FieldB), so that a long description repeating a word cannot outweigh
//     a name that says it once.
//   - A tool that matches more of the request's words ranks above one
//     that matches fewer (coordination), each word counting by its IDF,
//     so that the common words of a request ("right now", "open") cannot
//     outweigh its rare one ("incidents").
//   - What a request asks to do counts: a tool whose name's action (read,
//     create, update, delete: its first verb) is not the request's (its
//     verb; a question reads) keeps a quarter of its score (half, when
//     one creates and the other updates: both write). A question's
//     unsaid object ("how many": a count) is a hint, and a tool's score
//     grows with its server's match of the request (up to 3x), so that a
//     request in a server's words finds that server's tools.
package toolsearch
