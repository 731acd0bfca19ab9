package stored

import "github.com/gatehouse-dev/gatehouse/internal/pin"

// TrustRecord is what Retrust recorded for one server.
type TrustRecord struct {
	// ServerID is the server's row ID.
	ServerID string `json:"serverId"`
	// Server is the configured server name.
	Server string `json:"server"`
	// Cleared is how many baseline entries the re-trust removed.
	Cleared int64 `json:"cleared"`
	// Tools are the trusted tools, sorted by name.
	Tools []TrustedTool `json:"tools"`
	// Instructions is the fingerprint of the server's instructions.
	Instructions string `json:"instructions"`
	// Prompts are the trusted prompts (Fingerprint is
	// pin.PromptFingerprint), sorted by name.
	Prompts []TrustedTool `json:"prompts"`
	// ResourceTemplates are the trusted resource templates (Name is the
	// URI template, Fingerprint pin.TemplateFingerprint), sorted.
	ResourceTemplates []TrustedTool `json:"resourceTemplates"`
	// Listing is the fingerprint of the trusted listing (what `gatehouse
	// drift list` shows as "listing").
	Listing string `json:"listing"`
	// Changes are what the re-trust accepted: the differences between the
	// baseline it replaced and the listing it recorded (empty when they
	// were the same).
	Changes []pin.Change `json:"changes"`
}

// TrustedTool is one recorded tool contract (or prompt, or resource
// template).
type TrustedTool struct {
	// Name is the tool's name on its server.
	Name string `json:"name"`
	// Fingerprint is pin.ToolFingerprint of its contract.
	Fingerprint string `json:"fingerprint"`
}
