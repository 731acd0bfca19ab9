package store_test

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Parse a DSN to see which backend it names and with what durability; its
// String never shows the password. To open one, use store/dsn.Open (see
// its example).
func ExampleParseDSN() {
	for _, s := range []string{
		"memory:",
		"sqlite:/var/lib/gatehouse/journal.db?durability=power",
		"postgres://gatehouse:s3cret@127.0.0.1:5432/gatehouse?sslmode=disable",
		"mysql://127.0.0.1/gatehouse",
	} {
		d, err := store.ParseDSN(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s durability=%q %s\n", d.Kind, d.Durability, d)
	}
	// Output:
	// memory durability="" memory:
	// sqlite durability="power" sqlite:/var/lib/gatehouse/journal.db?durability=power
	// postgres durability="" postgres://gatehouse:xxxxx@127.0.0.1:5432/gatehouse?sslmode=disable
	// error: store: invalid DSN: unknown DSN scheme: scheme "mysql" (want sqlite, postgres, postgresql or memory)
}
