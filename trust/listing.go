package trust

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/trust/internal/judge"
	"github.com/gatehouse-dev/gatehouse/trust/internal/published"
	"github.com/gatehouse-dev/gatehouse/trust/internal/stored"
)

// Listing is what one session of a server published: its tools, the
// fingerprint of its instructions, its prompts and resource templates, and
// the errors of the kinds it could not list (those kinds are not judged).
type Listing = published.Listing

// List lists what sess publishes (tools, prompts, resource templates; the
// instructions of its initialize result).
func List(ctx context.Context, sess *mcp.ClientSession) (Listing, error) {
	return published.List(ctx, sess)
}

// Prints are a listing's fingerprints (pin contracts of its tools, prompts
// and templates, and its instructions'); Prints.Print names the listing.
type Prints = judge.Prints

// Fingerprint fingerprints a listing of server (its configured name).
func Fingerprint(server string, p Listing) Prints { return judge.Fingerprint(server, p) }

// Verdict is a listing judged against its baseline and the fleet's record:
// the tools' decisions, the trusted tools gone, the drift events worded
// for a person, and the prompts' and templates' pins and decisions.
type Verdict = judge.Verdict

// Kind is a kind of forwarded item pinned beside tools: Prompt or
// Template.
type Kind = stored.Kind

// The kinds of forwarded items.
const (
	Prompt   = stored.Prompt
	Template = stored.Template
)

// Items are a live listing of one kind of forwarded item, fingerprinted
// (LivePrompts, LiveTemplates), for Verdict.Admit.
type Items = judge.Items

// LivePrompts fingerprints a live listing of server's prompts.
func LivePrompts(server string, prompts []*mcp.Prompt) Items {
	return judge.LivePrompts(server, prompts)
}

// LiveTemplates fingerprints a live listing of server's resource
// templates.
func LiveTemplates(server string, templates []*mcp.ResourceTemplate) Items {
	return judge.LiveTemplates(server, templates)
}

// TrustRecord is what a re-trust recorded for one server: its row ID and
// name, the baseline entries cleared, the trusted tools, prompts and
// resource templates with their fingerprints, the instructions' and the
// listing's fingerprints, and the changes the re-trust accepted.
type TrustRecord = stored.TrustRecord

// TrustedTool is one recorded tool contract (or prompt, or resource
// template): its name on its server and its pin fingerprint.
type TrustedTool = stored.TrustedTool

// RowID returns the store row ID of a server by its configuration:
// "<plugin name>/<server name>" for a plugin's server and "config:<server
// name>" for a server configured without a plugin.
func RowID(cfg plugin.ServerConfig) string { return stored.RowID(cfg) }

// IdentityHash is 8 hex digits of the SHA-256 of a server's identity (its
// URL, or its resolved command and args): what tells apart two servers
// given one row ID.
func IdentityHash(identity string) string { return stored.IdentityHash(identity) }
