// Package audit is Gatehouse's audit trail that proves itself: the events
// worth an auditor's time (calls, refusals, approvals asked for and
// decided, trusts, drift, purges, connections) as entries of hash chains in
// the store (store.AuditStore), with signed checkpoints.
//
//	w, err := audit.NewWriter(ctx, st, &audit.WriterOptions{Chain: "gw/" + instance, Instance: instance, Key: key})
//	...
//	err = w.Append(ctx, audit.Call(subject, server, tool, args, "ok", d)) // blocks while the queue is full
//	...
//	err = w.Close() // flushes, checkpoints, ends its goroutine
//
//	res, err := audit.Verify(ctx, st, &audit.VerifyOptions{PublicKey: pub})
//	if res.Problem != nil { ... } // the first broken entry: chain, seq, what is wrong
//
// # Chains and hashes
//
// Each entry carries the hash of the one before in its chain
// (store.AuditEntry.PrevHash) and its own: SHA-256 over a length-prefixed
// encoding of every field but the store's ID (Hash), the previous hash and
// the sequence number among them. So an entry edited, deleted, inserted or
// moved breaks its own hash or its successor's link, and Verify names the
// first such entry. Each gateway instance writes its own chain (its
// Writer is the chain's one writer, its appends never wait for another
// replica's); the operators' commands share one chain ("operator") whose
// appends are serialized by the store (an append that does not follow the
// head is refused and retried). docs/audit.md has the measurement behind
// the choice.
//
// # Checkpoints
//
// A Writer checkpoints its chain every CheckpointEvery entries or
// CheckpointInterval, and at Close (and a chain that has none gets its
// first within FirstCheckpoint): (chain, seq, hash, time), signed with
// Ed25519 when it holds a key. The operators' commands checkpoint the
// operators' chain after each entry (AppendCheckpointed). The hashes alone
// prove nothing against someone who can rewrite the database (they can
// recompute every hash); a signed checkpoint does, up to its seq, for
// whoever holds the public key. A signed checkpoint also links to the
// checkpoint before it in its chain (its seq and CheckpointDigest, in the
// signature: SignLinked, LinkOf), so a checkpoint deleted or replaced in
// the middle is found; those written before links (a bare signature) still
// verify. Retention (Retain) deletes a chain's start only behind a
// checkpoint, from which the rest still verifies.
//
// What a store writer can still do unseen is cut a chain's end together
// with its checkpoints, or delete a chain whole: a head kept outside the
// store (LatestHead, Head.Marshal, ParseHead; `gatehouse audit head`)
// catches both when given to Verify (VerifyOptions.ExpectHead), as
// VerifyOptions.ExpectChains catches the second.
//
// # Never dropped
//
// Writer.Append puts the entry in a bounded queue and returns; a goroutine
// commits the queue in batches (one transaction each, the first entry of a
// batch waiting up to Linger for company). A full queue blocks
// Append (the call waits: back-pressure, not loss), and a store that fails
// is retried, so the queue fills and calls wait. An entry may be lost only
// if the process dies (a crash, SIGKILL, power loss) after Append returned
// and before its batch committed (at most the queue and one batch), or if
// the store still refuses writes when Close gives up (CloseTimeout). An
// Append whose context ends while it waits for room writes nothing and
// says so.
//
// An entry that belongs with another write, such as a keyed call's with its
// journal completion, is not queued: Writer.Entry prepares it, the store
// links it (Link) inside that write's transaction
// (store.AuditJournalStore.CompleteAudited), and Writer.Note tells the
// writer, whose checkpoints then cover it. When the store is a
// store.AuditJournalStore the Writer's own batches are linked the same way,
// in the store's commit queue, so the two never race for the chain's head.
package audit
