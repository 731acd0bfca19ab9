package vault_test

import (
	"fmt"
	"os"
)

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }

func fmtAny(v any) string { return fmt.Sprint(v) }
