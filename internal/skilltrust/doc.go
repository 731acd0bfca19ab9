// Package skilltrust pins the skills of plugins the way the toolset pins
// the tools of MCP servers: a skill is text a model will follow, like a
// tool description, so a skill that changes on disk after it was trusted is
// drift, withheld until an operator trusts it again.
//
// A skill's contract (skills.Contract: its plugin, name and description,
// the SHA-256 of its SKILL.md and its file list with sizes and hashes) is
// fingerprinted (skills.Contract.Fingerprint) and kept in the same store,
// baseline and drift record as a server's tools, prompts and templates: in
// the baseline of a store row of its own per plugin, whose ID and name are
// Owner(plugin), "skills:" and the plugin's name. A plugin's name never
// holds ':' (Agent Plugins §5.5), and the rows of MCP servers are
// "<plugin>/<server>" and "config:<server>", so the row of a plugin's
// skills never shares its ID with a server's. It is what an operator types:
//
//	gatehouse drift show skills:acme
//	gatehouse trust skills:acme --listing FINGERPRINT
//
// Apply judges a catalog against those baselines, and is what the agent
// side and the gateway both call (at start, and again on each re-check with
// a catalog built afresh from disk):
//
//	cat, _ := skills.New(plugins, nil)
//	served, events, err := skilltrust.Apply(ctx, st, cat, instance)
//
// A long-lived process runs a Watcher instead (the gateway does): it
// judges at start, again every re-check with a catalog built afresh, and
// within a poll of a trust or of drift another instance recorded (Heads),
// and hands each new result to its Serve.
//
// A plugin seen for the first time is trusted on first use: its skills are
// recorded as its baseline (a plugin with none is pinned as having none). Afterwards a skill whose contract changed, or a
// skill the plugin did not have when it was trusted, is withheld: absent
// from the returned catalog, its text never shown (there is no quarantine
// with a stand-in text, as a tool has, because a skill is nothing but its
// text). A trusted skill that is gone is reported. Each drift is recorded
// as an observation (store.DriftStore) with the contracts before and after,
// so `gatehouse drift list` and `drift show` show it beside the drift of
// servers (kind "skill"), and a skill another instance saw change is
// withheld on every instance until the operator trusts one listing
// (`gatehouse trust skills:PLUGIN --listing FP`, or Retrust, which records
// what the plugin holds now).
//
// What is pinned is what New hashed: the bytes of SKILL.md and of every
// listed file (scripts too: they are hashed and listed, never run). Trust
// is only as good as the reads that follow it: the catalog must serve the
// bytes it hashed, not whatever the disk holds at read time (package
// skills re-checks at read time).
package skilltrust
