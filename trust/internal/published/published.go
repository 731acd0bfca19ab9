// Package published lists what an MCP server publishes on a client
// session: its tools and the fingerprint of its instructions, and its
// prompts and resource templates when it announced them. It keeps no
// state; what the listing is judged against is the toolset's business.
//
//	l, err := published.List(ctx, sess)
//	prints, rejected := stored.ToolPrints(l.Tools)
//	for _, err := range l.Errs { /* a kind not listed this time */ }
package published

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/trust/internal/stored"
)

// Listing is one server's listing as a toolset received it.
type Listing struct {
	// Tools are the tools as listed (as the go-sdk client decoded them).
	Tools []*mcp.Tool
	// Instructions is the fingerprint of the session's instructions
	// (stored.InstructionsPrint); "" when unknown.
	Instructions string

	// Prompts and resource templates. A kind is listed when its listing
	// succeeded or the server lacks the capability (then it lists
	// nothing); a kind that is not listed is unknown, not empty.
	Prompts         []*mcp.Prompt
	Templates       []*mcp.ResourceTemplate
	PromptsListed   bool
	TemplatesListed bool
	// Errs says why a kind was not listed.
	Errs []error
}

// List lists a session's tools (every page), then its prompts and
// resource templates (when the server announced the capabilities). Only a failed tools listing is an error.
func List(ctx context.Context, sess *mcp.ClientSession) (Listing, error) {
	var tools []*mcp.Tool
	for tool, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return Listing{}, fmt.Errorf("listing tools: %w", err)
		}
		tools = append(tools, tool)
	}
	l := Listing{Tools: tools, Instructions: stored.InstructionsPrint(sess.InitializeResult())}
	l.Errs = listItems(ctx, sess, &l)
	return l, nil
}

// listItems lists a session's prompts and resource templates into l, when
// the server has them. A failed listing leaves the kind unlisted (its pins
// are not judged or recorded by this listing) and is returned for the log.
func listItems(ctx context.Context, sess *mcp.ClientSession, l *Listing) []error {
	var caps *mcp.ServerCapabilities
	if res := sess.InitializeResult(); res != nil {
		caps = res.Capabilities
	}
	var errs []error
	l.PromptsListed, l.TemplatesListed = true, true
	if caps != nil && caps.Prompts != nil {
		for pr, err := range sess.Prompts(ctx, nil) {
			if err != nil {
				l.Prompts, l.PromptsListed = nil, false
				errs = append(errs, fmt.Errorf("listing prompts: %w", err))
				break
			}
			l.Prompts = append(l.Prompts, pr)
		}
	}
	if caps != nil && caps.Resources != nil {
		for r, err := range sess.ResourceTemplates(ctx, nil) {
			if err != nil {
				l.Templates, l.TemplatesListed = nil, false
				errs = append(errs, fmt.Errorf("listing resource templates: %w", err))
				break
			}
			l.Templates = append(l.Templates, r)
		}
	}
	return errs
}
