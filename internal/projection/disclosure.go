package projection

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/diag"
)

// Tier is the disclosure of a tool's input schema.
type Tier string

// The disclosure tiers, from most to least disclosed.
const (
	// Inline discloses the full input schema.
	Inline Tier = "inline"
	// Names discloses parameter names, scalar types and required only
	// (see ReduceSchema).
	Names Tier = "names"
	// Bare discloses {"type":"object"}.
	Bare Tier = "bare"
)

// DefaultBudgetTokens is the per-server disclosure budget used when Plan is
// given a budget <= 0.
const DefaultBudgetTokens = 20000

// CharsPerToken is the estimate Plan uses to turn sizes into tokens.
const CharsPerToken = 4

// Tool is the projection input and output for one tool, decoupled from the
// go-sdk's types.
type Tool struct {
	// Name is the projected name (see Name).
	Name string
	// Server is the configured name of the server that offers the tool.
	Server string
	// RemoteName is the tool's name on its server; calls use it.
	RemoteName string
	// Description is the tool's description (sanitize it with Sanitize
	// before it reaches a model).
	Description string
	// InputSchema is the tool's JSON Schema for its arguments, as decoded
	// from JSON (map[string]any, []any, string, float64, bool, nil).
	InputSchema map[string]any
}

// Cost is the size in tokens of one server's catalogue at each tier, as Plan
// estimates it.
type Cost struct {
	// Floor counts every tool's name and description: never cut.
	Floor int
	// Inline is Floor plus every full input schema.
	Inline int
	// Names is Floor plus every schema reduced to tier Names.
	Names int
	// Bare is Floor plus {"type":"object"} per tool.
	Bare int
}

// Estimate returns the token costs of tools at each tier. A size is the
// number of UTF-8 bytes (of the name, the description as given, and the
// compact JSON encoding of a schema), and tokens are ceil(bytes / 4). Callers
// pass descriptions already sanitized, as the model will see them.
func Estimate(tools []Tool) Cost {
	var floor, inline, names int
	for _, t := range tools {
		floor += len(t.Name) + len(t.Description)
		inline += jsonSize(t.InputSchema)
		names += jsonSize(ReduceSchema(t.InputSchema, Names))
	}
	return Cost{
		Floor:  tokens(floor),
		Inline: tokens(floor + inline),
		Names:  tokens(floor + names),
		Bare:   tokens(floor + len(bareJSON)*len(tools)),
	}
}

const bareJSON = `{"type":"object"}`

// Plan chooses the disclosure tier of one server's catalogue (its tools after
// filtering) within budgetTokens (DefaultBudgetTokens when <= 0; sizes as in
// Estimate). It returns Inline when the descriptions and full schemas fit,
// else Names when the reduced schemas fit, else Bare.
//
// The catalogue floor (every name and description) is never cut. When the
// floor alone is over budget Plan returns Bare and one
// diag.DisclosureBudgetExceeded diagnostic (origin server) that names the
// tool count, the floor in tokens, the budget, and the server's allow/block
// filter as the way down.
//
// Servers listed in alwaysLoad are exempt: the caller does not call Plan for
// them and discloses them Inline.
func Plan(server string, tools []Tool, budgetTokens int) (Tier, []diag.Diagnostic) {
	if budgetTokens <= 0 {
		budgetTokens = DefaultBudgetTokens
	}
	var floorBytes, inlineBytes int
	for _, t := range tools {
		floorBytes += len(t.Name) + len(t.Description)
		inlineBytes += jsonSize(t.InputSchema)
	}
	if tokens(floorBytes+inlineBytes) <= budgetTokens {
		return Inline, nil
	}
	floor := tokens(floorBytes)
	if floor > budgetTokens {
		return Bare, []diag.Diagnostic{diag.New(diag.DisclosureBudgetExceeded, "", server,
			"server %q offers %d tools whose names and descriptions alone take about %d tokens, over the disclosure budget of %d tokens; they are all still listed, without schemas; narrow it with the server's allow/block filter (or list it in alwaysLoad, or raise the budget)",
			server, len(tools), floor, budgetTokens)}
	}
	namesBytes := floorBytes
	for _, t := range tools {
		namesBytes += jsonSize(ReduceSchema(t.InputSchema, Names))
		if tokens(namesBytes) > budgetTokens {
			return Bare, nil
		}
	}
	return Names, nil
}

func tokens(bytes int) int { return (bytes + CharsPerToken - 1) / CharsPerToken }

// ReduceSchema returns schema as disclosed at tier, never mutating or sharing
// any part of schema:
//
//   - Inline: a deep copy (nil stays nil);
//   - Names: {"type":"object","properties":{name:{"type":T}...},"required":[...]}
//     keeping each top-level parameter name and its type T: a type name
//     ("string", "number", "integer", "boolean", "null", and "array" or
//     "object" as bare types with no nested body), or a list of them as in the
//     schema; when the parameter has no "type", the union of the types of its
//     anyOf/oneOf branches; {} when none is known. "required" keeps, in
//     order and once each, the required names that are still properties,
//     and is omitted when empty. Descriptions, titles, enums, formats,
//     defaults, examples, nested bodies and every other keyword are dropped;
//   - Bare, and any unknown tier: {"type":"object"}.
func ReduceSchema(schema map[string]any, tier Tier) map[string]any {
	switch tier {
	case Inline:
		if schema == nil {
			return nil
		}
		return deepCopyMap(schema)
	case Names:
		return namesSchema(schema)
	default:
		return map[string]any{"type": "object"}
	}
}

func namesSchema(schema map[string]any) map[string]any {
	props := map[string]any{}
	if in, ok := schema["properties"].(map[string]any); ok {
		for name, p := range in {
			ps := map[string]any{}
			if pm, ok := p.(map[string]any); ok {
				if t := propType(pm); t != nil {
					ps["type"] = t
				}
			}
			props[name] = ps
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	var req []any
	seen := map[string]bool{}
	add := func(v any) {
		if s, ok := v.(string); ok && !seen[s] {
			if _, isProp := props[s]; isProp {
				seen[s] = true
				req = append(req, s)
			}
		}
	}
	switch r := schema["required"].(type) {
	case []any:
		for _, v := range r {
			add(v)
		}
	case []string:
		for _, v := range r {
			add(v)
		}
	}
	if len(req) > 0 {
		out["required"] = req
	}
	return out
}

var jsonTypes = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true,
	"null": true, "array": true, "object": true,
}

// propType returns the disclosed type of a parameter schema: a string, a
// []any of strings, or nil when unknown.
func propType(p map[string]any) any {
	var types []string
	addType := func(v any) {
		switch t := v.(type) {
		case string:
			types = appendType(types, t)
		case []any:
			for _, e := range t {
				if s, ok := e.(string); ok {
					types = appendType(types, s)
				}
			}
		case []string:
			for _, s := range t {
				types = appendType(types, s)
			}
		}
	}
	if t, ok := p["type"]; ok {
		addType(t)
	} else {
		for _, k := range []string{"anyOf", "oneOf"} {
			branches, _ := p[k].([]any)
			for _, br := range branches {
				if bm, ok := br.(map[string]any); ok {
					addType(bm["type"])
				}
			}
		}
	}
	switch len(types) {
	case 0:
		return nil
	case 1:
		return types[0]
	}
	out := make([]any, len(types))
	for i, t := range types {
		out[i] = t
	}
	return out
}

func appendType(types []string, t string) []string {
	if !jsonTypes[t] {
		return types
	}
	for _, have := range types {
		if have == t {
			return types
		}
	}
	return append(types, t)
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}

// deepCopy copies the containers a JSON decoder (or a hand-built schema)
// produces; other values are immutable scalars and are shared.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	case []string:
		return append([]string(nil), t...)
	case []map[string]any:
		out := make([]map[string]any, len(t))
		for i, e := range t {
			out[i] = deepCopyMap(e)
		}
		return out
	case json.RawMessage:
		return append(json.RawMessage(nil), t...)
	default:
		return v
	}
}

// DescribeToolName is the name of the tool offered when any server defers
// its schemas (tier != Inline).
const DescribeToolName = "mcp__describe_tool"

// DescribeTool returns the definition of mcp__describe_tool: its name,
// description and input schema {"name": string}. Server is empty: the tool
// belongs to the toolset, not to a server.
func DescribeTool() Tool {
	return Tool{
		Name:       DescribeToolName,
		RemoteName: DescribeToolName,
		Description: "Returns the full description and input schema of a tool whose schema was shortened or " +
			"omitted from the tool list. Call it with the tool's name exactly as listed (for example " +
			"\"bank__transfer\") before calling that tool for the first time.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name": map[string]any{
					"type":        "string",
					"description": "The tool's name exactly as listed.",
				},
			},
			"required":             []any{"name"},
			"additionalProperties": false,
		},
	}
}
