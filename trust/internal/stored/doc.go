// Package stored holds the forms in which a toolset keeps a server's trust
// state, and the prints that go into them; all pure (no I/O, no
// connection).
//
//	prints, rejected := stored.ToolPrints(listed)   // rejected: reported, withheld
//	cat, _ := stored.EncodeCatalogue(listed, prints) // the row's catalogue
//	tb, err := stored.ParseBaseline(fromTheStore)   // tb.Tools, tb.Items[stored.Prompt]
//
// A store row (Row) carries the server's identity (RowID, IdentityHash),
// its RowURL and its last published catalogue (EncodeCatalogue,
// DecodeCatalogue). Its baseline (store.Baseline, read by ParseBaseline)
// holds pins by kind and name: tools, prompts and resource templates
// (Kind.Store), the instructions' fingerprint (InstructionsPrint), and a
// marker per pinned kind (Kind.Marker). The prints
// come from the listed MCP objects (ToolPrints, PromptPrints,
// TemplatePrints); an item without one is Rejected, never dropped
// silently.
//
// The toolset judges listings against what ParseBaseline returns, reads
// and writes the store, and turns rejected items into its drift events;
// none of that is here.
package stored
