package plugin_test

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/plugin"
)

// ExampleLoad loads a small plugin: the manifest has an unknown field
// (reported, ignored), the skill loads, and of the two servers the one with
// a plain-http, non-loopback URL is skipped while its sibling loads.
func ExampleLoad() {
	res := plugin.Load("testdata/example/acme")
	if !res.OK() {
		fmt.Println("rejected")
	}
	p := res.Plugin
	fmt.Println("plugin:", p.Manifest.Name, p.Manifest.Version)
	for _, s := range p.Skills {
		fmt.Println("skill:", s.Name, "-", s.Description)
	}
	for _, s := range p.Servers {
		fmt.Println("server:", s.Name, s.Type, s.Command, s.Args)
	}
	for _, d := range res.Diagnostics {
		fmt.Println("diagnostic:", d.Rule, d.Origin)
	}
	// Output:
	// plugin: acme 0.1.0
	// skill: greet - Greets the user by name. Use when the user says hello.
	// server: bank stdio ./bin/bank [--db ${PLUGIN_DATA}/bank.db]
	// diagnostic: unknown-field plugin.json
	// diagnostic: invalid-url weather
}

// ExampleExpand shows the single-pass placeholder expansion of §9.2.
func ExampleExpand() {
	v := plugin.Vars{Root: "/home/alex/.agents/plugins/devtools", Data: "/home/alex/.agents/plugins/data/devtools"}
	fmt.Println(plugin.Expand("--config=${PLUGIN_ROOT}/config/db.json", v))
	fmt.Println(plugin.Expand("${PLUGIN_DATA}/cache ${HOME} $PLUGIN_ROOT", v))
	// Output:
	// --config=/home/alex/.agents/plugins/devtools/config/db.json
	// /home/alex/.agents/plugins/data/devtools/cache ${HOME} $PLUGIN_ROOT
}
