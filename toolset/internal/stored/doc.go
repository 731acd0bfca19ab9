// Package stored holds the forms in which a toolset keeps a server's trust
// state, and the prints that go into them; all pure (no I/O, no
// connection).
//
//	prints, rejected := stored.ToolPrints(listed)   // rejected: reported, withheld
//	cat, _ := stored.EncodeCatalogue(listed, prints) // the row's catalogue
//	seed := stored.BaselineStrings(pin.BaselineOf(prints))
//	stored.SeedKind(seed, stored.Prompt, promptPrints, nil)
//	tb, err := stored.ParseBaseline(fromTheStore)   // tb.Tools, tb.Items[stored.Prompt]
//
// A store row (Row) carries the server's identity (RowID, IdentityHash),
// its RowURL and its last published catalogue (EncodeCatalogue,
// DecodeCatalogue). Its baseline is a map of pins (ParseBaseline,
// BaselineStrings, SeedKind) under the tool names, the instructions'
// fingerprint (InstructionsPrint) and, for prompts and resource
// templates, keys with a space (Kind.KeyPrefix, Reserved). The prints
// come from the listed MCP objects (ToolPrints, PromptPrints,
// TemplatePrints); an item without one is Rejected, never dropped
// silently.
//
// The toolset judges listings against what ParseBaseline returns, reads
// and writes the store, and turns rejected items into its drift events;
// none of that is here.
package stored
