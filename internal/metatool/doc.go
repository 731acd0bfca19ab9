// Package metatool holds the tools a model is handed beside a catalog's
// own: tool search, which the toolset offers an agent (mcp__search_tools,
// toolset.Options.SearchTool) and the gateway serves
// (gatehouse__search_tools), and the answer of mcp__describe_tool. For
// search: the definition, the arguments read strictly, the answer, and a
// Finder that keeps a toolsearch index of a tool map current, server by
// server.
//
//	var f metatool.Finder
//	hits, err := f.Find(gen, tools, "open a pull request", 8, allow) // gen: grows with the map; tools: its tools
//	res := f.Call(gen, tools, args, metatool.DefaultLimit, allow)      // the meta-tool's answer to a call
//
// The search answer is the one docs/reference/wire.md gives: structuredContent
// {"tools": [{"name", "description", "inputSchema", "score"}]}, best first,
// and the same tools as text for clients that read only text. Scores are
// rounded to two decimals: they are computed over the whole index, visible
// or not (see package toolsearch), and two decimals keep the order
// readable without handing a caller finer statistics of tools it cannot
// see.
//
// # Choices
//
//   - The index holds only what the tool map shows: the name, title,
//     description and input schema of each tool as the map serves it. A
//     quarantined tool is indexed with the map's quarantine text and an empty
//     schema, never with its drifted text; a withheld or hidden tool is not
//     in the map, so not in the index.
//   - The index follows the map lazily: the first search after the map
//     changed brings it up to date (Sync) before it ranks, replacing only
//     the servers whose tools changed (a print of each tool's text and
//     contract), so a drift decision on one server costs that server's
//     documents, and a map nobody searches costs nothing.
//   - Arguments are read leniently where a model is likely to stray (an
//     unknown field is ignored, a null limit is the default) and strictly
//     where the answer would be a guess (a query that is not a string, a limit
//     that is not a whole number from 1 to MaxLimit): each is a tool error
//     that says what to send.
package metatool
