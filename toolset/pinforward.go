package toolset

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// Prompts and resource templates are pinned like tools: the same baseline
// (under their own kinds, see store.KindPrompt), the same trust on
// first use, the same decisions (pin.Compare) and the same drift
// diagnostics. What differs is how a decision is applied: a changed prompt
// or template is not listed at all (a prompt is text the caller shows a
// model; there is no neutral stand-in for it), and its requests are refused
// with CodeQuarantined. Plain resources are not pinned: they are data a
// server adds and removes as it pleases.

// relistSoon re-lists a server in the background through the drift checks
// (record: diagnostics, first-sight pins, OnChange), paced by relist.Pacer:
// a storm of list_changed costs one re-listing.
func (c *conn) relistSoon() {
	t := c.ts
	if !c.relist.Announce() {
		return
	}
	started := t.background(func() {
		if !c.relist.Settle(t.life) {
			c.relist.Clear()
			return
		}
		_ = c.reconcileQueued(t.life)
	})
	if !started {
		c.relist.Clear()
	}
}

// quarantinedItem is the refusal of a request for a prompt (by projected
// name) or resource template (by URI template or a URI it matches) whose
// contract changed after it was trusted. It says no more than a
// quarantined tool's refusal: sanitized names and the remedy.
func quarantinedItem(c *conn, k trust.Kind, name string) error {
	sname := pin.SanitizeName(c.name)
	return &Error{Code: CodeQuarantined, Server: c.name, Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("%s %s of server %s changed after it was trusted, so it is withheld and its requests are refused until %s",
			k.Noun(), pin.SanitizeName(name), sname, pin.TrustRemedy(sname, ""))}}
}

// announceItems tells SessionHooks.ListChanged that a server's prompts and
// resources may look different after its pins changed.
func (t *Toolset) announceItems(c *conn) {
	f := t.hooks().ListChanged
	if f == nil || t.isClosed() {
		return
	}
	caps := c.capabilities()
	if caps.Prompts != nil {
		f(c.name, PromptsChanged)
	}
	if caps.Resources != nil {
		f(c.name, ResourcesChanged)
	}
}
