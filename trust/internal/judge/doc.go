// Package judge turns one listing of a server into trust decisions: it
// fingerprints what the server published (tools, prompts, resource
// templates, instructions), compares the prints with the server's trusted
// baseline, words each drift for a person, lists the changes an operator
// reviews (pin.Change, with the contracts before and after), and applies
// the drift other instances recorded in the store. It is pure: no I/O, no
// connection, no clock.
//
//	fp := judge.Fingerprint(server, listing)          // or FromCatalogue on a wake
//	tb, _ := stored.ParseBaseline(baseline)
//	v := judge.Judge(server, fp, tb, true)             // decisions, events
//	judge.Enforce(server, &v, openObservations)        // the fleet's record
//	v.Quarantines()                                    // a trusted name with another contract
//	fp.Lists(other)                                    // another session's listing is this one (no prints)
//	changes := judge.Changes(fp, baseline, v)          // what an operator reviews
//	entries := judge.Entries(fp)                       // the listing as a baseline
//	id := judge.ListingFingerprint(fp)                 // names it
package judge
