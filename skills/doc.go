// Package skills puts the Agent Skills of loaded plugins to use: a short
// index for a system prompt, and reads of a skill's body and files when a
// model asks for them (progressive disclosure).
//
//	res := plugin.Load("plugins/hello")
//	cat, ds := skills.New([]*plugin.Plugin{res.Plugin}, nil)
//	for _, d := range ds {
//		log.Print(d) // a symlink out of a skill directory, a file too large...
//	}
//	system := "You are a helpful assistant.\n\n" + cat.Index()
//	body, err := cat.Body(ctx, "hello", "greeting")                        // SKILL.md after its front matter
//	ref, err := cat.ReadFile(ctx, "hello", "greeting", "references/style.md") // one listed file
//
// A model reads skills through two tools, skills__read and
// skills__read_file (Tools defines them, Call answers them); package
// durable/loop hands them to its model when its Options.Skills is set.
//
// # What a Catalog promises
//
//   - Containment. A skill's files are listed by New from its directory:
//     regular files only, each resolved (symlinks evaluated) and inside the
//     skill directory; a symlink out of it is left out with a
//     path-escapes-plugin-root diagnostic. Every read resolves the path
//     again and opens it through an os.Root on the skill directory, so a
//     file swapped for a symlink out of the directory after New is refused
//     (ErrEscapes), and so is a FIFO or a device. SKILL.md is contained in
//     its plugin root, the rule of package plugin.
//   - Only what was listed, as it was listed. ReadFile serves only paths New
//     listed, and Body and ReadFile serve only the bytes New hashed: content
//     changed on disk since is refused with ErrChanged until a new Catalog is
//     built (and its contracts judged by trust). So what a model reads is
//     what the contract pinned.
//   - Size. A body or file over Options.MaxFileBytes (1 MiB by default) is
//     refused with ErrTooLarge; its size is checked before reading, and the
//     read goes through an io.LimitReader, so a 50 MiB reference is never
//     read into memory, at New or later.
//   - Sanitized text. Descriptions, bodies and text files are sanitized like
//     tool descriptions (the characters that hide or reorder text are
//     removed: control, format, bidi, zero-width and tag characters, private
//     use, other default-ignorables). File names that sanitizing would change
//     are not listed.
//   - Bounded index. Index stays within Options.IndexBudget bytes: beyond
//     it, names only, then a count.
//   - Scripts are listed and readable as text; nothing in Gatehouse runs
//     them.
//
// It does not promise that a skill's text is harmless: a skill is
// instructions a model will follow, like a tool description. Trust pins a
// skill's contract (its fingerprint) so that a change is drift; the index's
// framing tells the model that descriptions are information, not orders.
//
// # Trust
//
// A plugin's skills are pinned the way a toolset pins a server's tools,
// through package trust, in the same store rows, baselines and drift
// record. Apply judges a catalog against them and returns it without the
// skills that drifted, with the events worded for a person:
//
//	cat, _ := skills.New(plugins, nil)
//	served, events, err := skills.Apply(ctx, st, cat, instance)
//
// A plugin's skills are one trust.Pinned listing under the row
// Owner(plugin), "skills:" and the plugin's name (no plugin name holds
// ':', so it never shares an ID with a server's row); it is what an
// operator types: `gatehouse drift show skills:acme`, `gatehouse trust
// skills:acme --listing FINGERPRINT`. The first sight of a plugin is
// trusted on first use (a plugin with none is pinned as having none).
// Afterwards a skill whose contract changed, or one the plugin did not have
// when it was trusted, is withheld: absent from the catalog, its text never
// shown (there is no stand-in text, as a quarantined tool has, because a
// skill is nothing but its text); a trusted skill that is gone is reported.
// Each drift is recorded with the contracts before and after, and a skill
// another instance saw change is withheld on every instance until an
// operator trusts one listing, or Retrust records what the plugin holds
// now. A long-lived process runs a Watcher (the gateway does): it judges at
// start, on every re-check with a catalog built afresh, and within a poll of
// a trust or of drift another instance recorded.
//
// What is pinned is what New hashed: the bytes of SKILL.md and of every
// listed file (scripts too: hashed and listed, never run); the catalog
// serves those bytes, re-checked at read time.
//
// # URIs
//
// URI and ParseURI name a skill's body (skill://PLUGIN/NAME/SKILL.md) and
// files (skill://PLUGIN/NAME/PATH) for the gateway's resources; ParseURI
// accepts only the one form URI writes.
package skills
