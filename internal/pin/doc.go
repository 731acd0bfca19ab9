// Package pin computes the fingerprints Gatehouse pins MCP tool contracts
// (and prompts and resource templates) with, and decides what happens to
// each tool when a server's listing drifts from its trusted baseline.
//
// Everything here is a pure function: no I/O, no storage, no clock. The store
// keeps baselines (one string per tool, Pin.String) and the toolset applies
// the decisions; this package only computes.
//
// # Canonical JSON
//
// Canonical and CanonicalValue produce RFC 8785 (JSON Canonicalization
// Scheme, JCS) output: object members sorted by the UTF-16 code units of
// their keys, no whitespace, the JCS string escapes, and numbers as IEEE 754
// doubles printed the way ECMAScript prints them. Following JCS, a number is
// a double: integers beyond 2^53 lose precision (9007199254740993 becomes
// 9007199254740992), and two documents that differ only in such digits have
// the same fingerprint. Input JCS forbids is an error, never repaired:
// duplicate keys, invalid UTF-8, lone surrogate escapes, numbers that
// overflow a double.
//
// # Fingerprint byte layouts
//
// Every fingerprint is the lower-case hex encoding (64 characters) of
//
//	SHA-256( DOMAIN || 0x00 || PAYLOAD )
//
// where DOMAIN is the ASCII string below, 0x00 is one zero byte, and PAYLOAD
// is UTF-8. Domains are versioned: a change of layout gets a new domain, so
// fingerprints of different kinds or versions never collide.
//
// Tool contract (ToolFingerprint), DOMAIN "gatehouse/tool-contract/v1",
// PAYLOAD the JCS form of the object
//
//	{"annotations":A,"description":D,"inputSchema":I,"name":N,"outputSchema":O,"title":T}
//
// (members in exactly this order, which is the JCS order) where N, T and D
// are JSON strings of the tool's name, title and description ("" when
// absent), and I, O and A are the JCS forms of the input schema, output
// schema and annotations, or null when absent. For example the tool
//
//	name "transfer", title "Transfer money", description "Moves money.",
//	inputSchema {"type": "object"}, no outputSchema, no annotations
//
// has the PAYLOAD
//
//	{"annotations":null,"description":"Moves money.","inputSchema":{"type":"object"},"name":"transfer","outputSchema":null,"title":"Transfer money"}
//
// and the fingerprint
// 84fb6b2ba032550c1e982d0a5b146880c33b4e5a135f20c8d567a15cfcbc971a.
//
// Unnamed tool contract (UnnamedFingerprint, used to recognise renames),
// DOMAIN "gatehouse/tool-contract-unnamed/v1", PAYLOAD the same object
// without its "name" member:
//
//	{"annotations":A,"description":D,"inputSchema":I,"outputSchema":O,"title":T}
//
// Server instructions (InstructionsFingerprint), DOMAIN
// "gatehouse/server-instructions/v1", PAYLOAD the instructions string's bytes
// as they are (no JSON quoting, no normalization).
//
// Tool call (CallFingerprint, kept by the journal), DOMAIN
// "gatehouse/call/v1", PAYLOAD the JCS form of
//
//	{"args":A,"server":S,"tool":T}
//
// where S and T are JSON strings and A is the JCS form of the call's
// arguments, or {} when they are absent or null.
//
// Prompt (PromptFingerprint), DOMAIN "gatehouse/prompt-contract/v1", PAYLOAD
// the JCS form of
//
//	{"arguments":[{"description":D,"name":N,"required":R,"title":T},...],"description":D,"name":N,"title":T}
//
// with the arguments in the order the server lists them ([] when none) and R
// a JSON boolean.
//
// Resource template (TemplateFingerprint), DOMAIN
// "gatehouse/resource-template-contract/v1", PAYLOAD the JCS form of
//
//	{"annotations":A,"description":D,"mimeType":M,"name":N,"title":T,"uriTemplate":U}
//
// with A the JCS form of the annotations, or null. Compare decides prompts
// and templates too: a ToolPrint's Name is then the prompt's name or the URI
// template, and Unnamed is "" (no rename detection).
//
// Skill (SkillFingerprint, an Agent Skill of a plugin), DOMAIN
// "gatehouse/skill-contract/v1", PAYLOAD the JCS form of
//
//	{"description":D,"files":[{"path":P,"sha256":H,"size":S},...],"name":N,"plugin":G,"skill":K}
//
// with K the hex SHA-256 of the SKILL.md file, the files sorted by path and
// S a JSON integer.
//
// Any implementation that produces RFC 8785 output can reproduce these
// fingerprints; the tests pin golden values computed independently.
//
// # Drift
//
// Compare takes a Baseline (tool name → Pin: the trusted fingerprint and
// unnamed fingerprint) and the ToolPrints of a fresh listing, and returns one
// Decision per tool name, sorted by name: Trusted, Quarantined (same name,
// other contract), Withheld (a name the baseline lacks; RenamedFrom when its
// contract, name aside, is exactly that of a vanished tool), Removed, or New
// (no baseline at all: first sight, to be recorded with BaselineOf). A
// quarantined tool's description is replaced by QuarantineDescription, which
// carries no server-controlled text but the sanitized server and tool names.
//
// # Showing drift to an operator
//
// A Change is one difference between a baseline and a listing, with the
// contracts before and after as JSON (ToolView, PromptView, TemplateView,
// FingerprintView). RenderChange writes one as a readable diff: the
// description line by line, schemas and annotations leaf by leaf by JSON
// path. Every server-controlled string in it goes through Visible, which
// spells out the characters that hide or reorder text (zero-width, bidi
// controls, tag characters, other format and control characters,
// default-ignorables, invalid UTF-8) as escapes like ⟦U+200B⟧ that a server
// cannot forge, since the brackets themselves are escaped too.
package pin
