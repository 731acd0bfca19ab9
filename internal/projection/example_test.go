package projection_test

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/projection"
)

func ExampleName() {
	fmt.Println(projection.Name("bank", "transfer"))
	fmt.Println(projection.Name("my.srv", "search"))
	fmt.Println(projection.Name("", "search"))
	// Output:
	// bank__transfer
	// my_srv__search_1tzlooy
	// search
}

func ExamplePrefixes() {
	prefixes, diags := projection.Prefixes([]projection.ServerRef{
		{Name: "local", Identity: "https://a.example/mcp"},
		{Name: "bank", Identity: "https://bank.example/mcp"},
		{Name: "local", Identity: "node\x00server.js"},
	})
	fmt.Println(prefixes)
	for _, d := range diags {
		fmt.Println(d.Rule, d.Origin)
	}
	// Output:
	// [local_42c16f3b bank local_74a6f4f5]
	// server-name-collision local
}

func ExampleSanitize() {
	fmt.Printf("%q\n", projection.Sanitize("Transfer \u202Eevil\u200B \x1b[31mnow\x1b[0m 💸"))
	// Output:
	// "Transfer evil now 💸"
}

func ExampleReduceSchema() {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"to":     map[string]any{"type": "string", "description": "IBAN", "pattern": "^[A-Z]{2}"},
			"amount": map[string]any{"type": "number", "minimum": 0},
			"memo":   map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		},
		"required": []any{"to", "amount"},
	}
	fmt.Println(projection.ReduceSchema(schema, projection.Names))
	fmt.Println(projection.ReduceSchema(schema, projection.Bare))
	// Output:
	// map[properties:map[amount:map[type:number] memo:map[type:object] to:map[type:string]] required:[to amount] type:object]
	// map[type:object]
}
