package deps

import (
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/spf13/cobra"
	_ "go.uber.org/goleak"
	_ "go.yaml.in/yaml/v3"
	_ "modernc.org/sqlite"
)
