package projected

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ContractHash is ToolInfo.ContractHash: the SHA-256 (hex) of the JSON of
// the tool's contract as the go-sdk client decoded it.
func ContractHash(tool *mcp.Tool) string {
	contract := map[string]any{
		"name":         tool.Name,
		"title":        tool.Title,
		"description":  tool.Description,
		"inputSchema":  tool.InputSchema,
		"outputSchema": tool.OutputSchema,
		"annotations":  tool.Annotations,
	}
	// encoding/json writes map keys sorted and struct fields in a fixed
	// order; schemas decoded by the go-sdk client are maps, so one encoding
	// is canonical for what a client receives.
	b, err := json.Marshal(contract)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
