// Package trust owns the life of a pinned listing: what an MCP server or
// a plugin publishes (tools, prompts, resource templates, instructions,
// skills) is judged against its trusted baseline, what this instance saw
// is recorded in the store, what other instances saw is enforced here, the
// unreviewed drift is answered for an operator, and exactly a reviewed
// listing is trusted again.
//
// A Ledger is one process's hand on that state, in a Store (every
// store.Store is one; nil keeps it in the process). The toolset calls it
// for each listing of a server:
//
//	led := trust.NewLedger(st, instance, logger)
//	p, _ := trust.List(ctx, session)                      // tools, prompts, templates, instructions
//	j, err := led.Record(ctx, srv, p, trust.Fingerprint(srv.Name, p))
//	j.Verdict.Decisions                                   // trusted, quarantined, withheld, removed
//	j, changed, err = led.Rejudge(ctx, srv, j, head)     // a trust or another replica's drift, polled by Heads
//
// The first sight of a server is trusted on first use (its listing becomes
// its baseline). Afterwards a tool whose contract changed is quarantined, a
// new one withheld, a gone one removed; each drift is recorded once per
// instance and listing as a store.Observation with the changes an operator
// reviews (pin.Change, contracts before and after), and a drift another
// instance recorded is enforced on every instance until an operator trusts
// a listing. Unreviewed picks, from the open observations, the listing
// each row waits to be reviewed on: the one rule of `gatehouse drift list`
// and of the console.
package trust
