// Package projection holds the pure functions that turn MCP servers' tool
// listings into what an agent sees: provider-legal tool names, per-server
// prefixes, discovery filters, text hygiene, the disclosure budget and the
// MCP part of a system prompt.
//
// Nothing here does I/O, keeps state or depends on the go-sdk's types; package
// toolset feeds it plain values and routes calls by the mapping it registers,
// never by splitting a projected name.
//
// # Naming rule
//
// The full name of remote tool T of a server with prefix P is P + "__" + T,
// or T alone when P is "". The projected name is:
//
//  1. the full name verbatim when it matches ^[a-zA-Z0-9_-]{1,64}$;
//  2. otherwise head + suffix, described next.
//
// The suffix is "_" + strconv.FormatUint(uint64(h), 36), where h is the
// 32-bit FNV-1a hash (hash/fnv New32a) of the UTF-8 bytes of the unsanitized
// full name: lower-case base 36, no padding, 2 to 8 characters in all. The
// head is the full name with every character outside [a-zA-Z0-9_-] replaced
// by one "_" (per rune: a multi-byte rune becomes one "_", and so does each
// byte of invalid UTF-8), cut to its first 64 - len(suffix) bytes.
//
// For example Name("my.srv", "café") is "my_srv__caf__76ifrc" (the "é" is
// one "_", then "_" + "76ifrc"), and a 90-character name keeps its first 56
// to 62 characters. The result always matches ^[a-zA-Z0-9_-]{1,64}$ (the
// empty name becomes "_ztntfp", base 36 of the FNV offset basis). Name
// depends on nothing but its arguments, so plugin order never changes a name.
//
// Name is not injective on (prefix, tool) pairs: ("a__b", "c") and
// ("a", "b__c") share the full name "a__b__c", a sanitized name could equal
// another server's legal one, and a server "mcp" with a tool "describe_tool"
// meets DescribeToolName. The caller registers projected names in a map,
// refuses (with a diagnostic) a name already taken, and routes calls by that
// map, never by splitting a name.
//
// # Prefixes
//
// A server's prefix is its configured name, unless the caller set an explicit
// prefix (which may be "" and is used as-is). When several servers in one
// toolset share a name, every one of them that has no explicit prefix gets
// name + "_" + the first 8 hex digits of SHA-256(identity), where identity is
// the server's URL or its resolved command and arguments joined by NUL; a
// server-name-collision diagnostic names them. No server is dropped and no
// server wins by order.
//
// # Hygiene
//
// Sanitize removes the characters listed in its doc comment from any text a
// server controls before that text reaches a model. Server instructions are
// never an input of this package: SystemPrompt does not take them.
//
// Every string of a schema a model sees goes through Sanitize
// (SanitizeSchema): every key and every string value at every depth, not
// only descriptions and titles, so defaults, examples, $comment, enum
// values, property names and unknown keywords carry no hidden text either.
//
// Some of those strings are binding: the model echoes them back (property
// names, required entries, enum and const values) or the server's
// validation depends on their exact bytes (patterns, $ref, types; the exact
// list is HiddenBindings'). When Sanitize would change a binding string
// there is no safe way to show the tool: its sanitized form makes the tool
// uncallable (the server rejects the name or value the model sends), and
// its raw form passes the hidden text to the model. Such a tool is
// withheld: its caller (package toolset) does not offer it and says so in a
// tool-drift diagnostic naming the places (HiddenDiagnostic: the pointers of
// HiddenBindings, made safe), never the strings. SanitizeObject cleans
// free-form JSON that is not a schema (an item's _meta). Letters of every script, combining marks and an emoji's
// variation selector are not changed by Sanitize, so names and enums in any
// language are not affected. Annotations (titles, descriptions, $comment,
// defaults, examples, unknown keywords) are never binding: they are shown
// sanitized.
//
// What this package sanitizes is only what is shown. The contract
// fingerprints of package pin are taken over the bytes the server sent,
// so a server that adds hidden characters to a trusted tool has changed
// its contract: that is drift, judged like any other change.
//
// # Disclosure
//
// Plan picks, per server, how much of each tool's input schema is disclosed
// (Inline, Names or Bare) so that the server's catalogue fits a token budget
// (default 20,000 tokens, 4 bytes a token; Estimate shows the figures);
// ReduceSchema produces the reduced schema; DescribeTool is the definition of
// the mcp__describe_tool tool that returns a deferred schema in full. Servers
// the operator lists in alwaysLoad are not planned: the caller discloses them
// Inline. SanitizeSchema cleans every string of a schema (see Hygiene);
// SchemaMap makes a JSON object of a schema as a client decoded it, and
// InputSchema does both for a tool's input schema.
package projection
