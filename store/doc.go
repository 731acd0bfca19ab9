// Package store declares Gatehouse's storage: small interfaces (ServerStore,
// JournalStore, CounterStore, ApprovalStore, ExecutorStore, DriftStore, and
// Store embedding them all), their row types, sentinel errors, and the DSN
// syntax. It imports no
// database driver; consumers declare the interface they need and accept it.
//
// # Implementations
//
//   - store/sqlite: the default, one file through modernc.org/sqlite.
//   - store/postgres: PostgreSQL through pgx/v5, for several processes.
//   - store/memory: maps behind a mutex, same semantics, nothing persisted.
//   - store/dsn: dsn.Open(ctx, dsn, opts) opens any of them by DSN. It lives
//     in its own package so that importing store never links a driver (and
//     so the implementations can import store without a cycle).
//   - store/storetest: the conformance suite all three pass.
//
// # DSNs
//
//	sqlite:PATH[?durability=process|power]   PATH verbatim: sqlite:./g.db, sqlite:/var/lib/g.db
//	postgres://user@host:5432/db?sslmode=... (or postgresql://); durability= accepted and removed
//	memory:
//
// sqlite://... is refused as ambiguous (is sqlite:///x relative or
// absolute?), as are sqlite::memory: (use memory:) and file: URIs.
// $GATEHOUSE_STORE overrides the configured DSN when callers apply
// DSNFromEnv. Errors never repeat a password; DSN.String redacts it.
//
// # Schema
//
// One schema serves SQLite and PostgreSQL, created by numbered migrations
// embedded in the binary (store/internal/sqlstore/migrations/NNNN_name.sql)
// and recorded in schema_migrations(version, name, applied_at). The dialect
// differences are the binary column type (BLOB or BYTEA), the
// database-assigned key (INTEGER PRIMARY KEY AUTOINCREMENT or BIGSERIAL;
// audit_log's is SQLite's row ID since version 13), since version 13 the
// journal's indexes (below), and since version 14 the audit trail's table:
// PostgreSQL keeps audit_log, a row an entry; SQLite keeps audit_blocks
// (id = the first entry's ID, chain, first_seq, last_seq, last_hash, data;
// unique index (chain, first_seq)), a row a run of one chain's entries
// encoded in data, what one append or one group commit wrote of a chain.
// Opening a store migrates it in one transaction (SQLite: BEGIN IMMEDIATE;
// PostgreSQL: pg_advisory_xact_lock keyed by the current schema), so
// processes starting together are safe. A database whose version is newer
// than the build fails with ErrSchemaTooNew and is left untouched.
//
//	servers    (id PK, name, type, url, catalogue bytes, updated_at, baseline_version)
//	baselines  (server_id FK -> servers ON DELETE CASCADE, kind, name, value, contract bytes NULL,
//	            created_at; PK server_id, kind, name)
//	observations (id AUTOINCREMENT/BIGSERIAL; server_id FK -> servers ON DELETE CASCADE, listing,
//	            baseline_version, seen_by, seen_at, last_seen_at, entries bytes (JSON), changes bytes,
//	            drifted, trusted_at)   indexes: (server_id, baseline_version, seen_by, id), (server_id, id)
//	journal    (scope, run_id, tool_call_id PK; fingerprint, state, outcome bytes, owner, executor,
//	            lease_until, created_at, updated_at, expires_at)        indexes: owner, expires_at
//	                       (SQLite since version 13: one, (owner, expires_at))
//	counters   (name PK, value, expires_at)                             index: expires_at
//	approvals  (id PK; scope, run_id, tool_call_id; server, tool, args_fingerprint, args bytes,
//	            caller_key, reason, owner, state, created_at, expires_at, decided_at, decided_by,
//	            used_at, contract)   indexes: (scope, run_id, tool_call_id) UNIQUE WHERE state is live,
//	                       (state, created_at), (owner, state), expires_at
//	approval_decisions (approval_id FK -> approvals ON DELETE CASCADE, seq; verdict, decided_by, decided_at)
//	approval_owners    (owner PK)   the row CreateApproval locks to bound a subject's pending approvals
//
// Version 1 had only servers (without baseline_version); version 2 added the
// rest; version 3 made an approval one execution's (arguments, expiry, use,
// decisions); version 4 added executors; version 5 gave baseline entries a
// kind and a contract and added observations. A row written by version 1
// survives the migration with an empty baseline; callers derive its
// baseline from its stored catalogue. An approval written by version 2
// keeps its state and decision, expires 24 hours after it was asked, and is
// used when its call has a journal record. A baseline written by version 4
// (one string per key) keeps every value and its server's baseline
// version, so nobody re-trusts: "" becomes the instructions entry, "prompt
// X" the prompt X, "resource-template X" the template X, "pinned prompts"
// and "pinned resource-templates" the markers "prompts" and "templates",
// and any other key the tool of that name; its contracts are nil.
//
// Times are stored as BIGINT unix milliseconds, UTC, in both engines; 0
// means "unset" (and, for an expiry, "never"). Read back, times are UTC
// with millisecond precision; the memory store rounds the same way.
// A deadline expires at the instant it names: a lease or an expiry T has
// passed at now when T <= now.
//
// # Semantics callers rely on
//
//   - A baseline entry is keyed by its kind (KindTool, KindPrompt,
//     KindTemplate, KindInstructions, KindMarker) and its name, so any name
//     a server publishes has its own entry: a tool named "prompt x", "" or
//     "pinned prompts" never meets a prompt, the instructions or a marker.
//     A name may be any string that is valid UTF-8 without a NUL byte
//     (BaselineKey.Validate: what PostgreSQL text holds; every store refuses
//     the rest with ErrInvalid, before writing anything). Each entry keeps
//     its value (a fingerprint) and the contract it trusted (opaque bytes,
//     nil when unknown).
//   - Baselines are insert-only (INSERT ... ON CONFLICT DO NOTHING): saving
//     never replaces a (server, kind, name) entry. ReplaceBaseline (a
//     re-trust, one transaction: no other process sees the baseline empty)
//     and TrustListing replace it whole; ClearBaseline removes it.
//     baseline_version grows on every save that adds an entry and on every
//     clear, replace and trust; a running process polls BaselineVersion,
//     DriftHeads or ListServers to notice a re-trust made by another
//     process. A deleted and re-created server restarts at 0, so compare
//     versions for inequality.
//   - Observations are the fleet's record of drift: what each instance
//     (SeenBy) saw of a server's listing, judged against the baseline
//     version it read. ObserveListing adds one unless the instance's latest
//     under that version has the same listing (then it moves its
//     LastSeenAt); it locks the server row first, so concurrent
//     observations of one listing add one row. An observation is open while
//     it is its instance's latest under the server's current version and
//     not trusted: any change of the baseline closes every open observation
//     of the server. OpenObservations reads them in one query (without the
//     entries, the form replicas poll); DriftHeads is one query a replica
//     polls to learn which servers moved (version or latest observation).
//   - TrustListing accepts exactly a reviewed listing, in one transaction
//     that locks the server row first: only when the listing is that of the
//     server's latest open observation (highest ID, any instance) does it
//     replace the baseline by that observation's entries, bump the version
//     once and mark it trusted. Anything else (an older listing, one never
//     observed, the same listing a second time) is a *StaleListingError and
//     changes nothing. Of two concurrent trusts of one listing, one
//     succeeds. Observations are kept until their server is deleted.
//   - The journal's Claim is INSERT ... ON CONFLICT DO NOTHING followed, only
//     when nothing was inserted, by a read: never read-then-write. Complete,
//     RenewLease, TakeOver and MarkInDoubt are single conditional UPDATEs
//     (compare-and-swap on state, executor and lease). Complete succeeds only
//     from started and only for the lease holder, even after its lease has
//     run out as long as nobody took it over; in_doubt is final for the
//     journal. Purge deletes the owner's journal records and approvals in
//     one transaction and returns the total. Sweep deletes records whose
//     non-zero expiry has passed; RenewLease and TakeOver push a non-zero
//     expiry up to the new lease so a live lease is never swept.
//     OldestStarted is one MIN(created_at) over started records, for the
//     journal-lag metric; journal has no index on state, so it reads the
//     table (bounded by Sweep). Started records are few by design.
//   - IncrBy is one UPSERT ... RETURNING. A counter whose expiry has passed
//     by the store's clock (Options.Now) restarts from zero; otherwise its
//     expiry becomes the later of the two. Fixed-window rate limits put the
//     window start in the key and the window end in expiresAt.
//   - An approval is for one execution. CreateApproval is idempotent on
//     the call's live approval (pending, approved or denied, not expired),
//     retires an expired one, and bounds a subject's pending approvals, in
//     one transaction (on PostgreSQL it locks the subject's approval_owners
//     row, so the bound holds across processes). DecideApproval is one
//     conditional UPDATE (pending and not expired -> decided, once) and the
//     decision's row. UseApproval is one conditional UPDATE (approved and
//     not expired -> used): an approval is spent once. SweepApprovals
//     deletes approvals whose expiry has passed, with their decisions.
//   - Connections (the token vault's rows) hold a sealed blob the store
//     never opens. LeaseRefresh is one conditional upsert (taken when free,
//     run out, or already the holder's), so two replicas racing get one
//     lease. TakeConnectFlow is one DELETE ... RETURNING: of concurrent
//     takes of a flow exactly one gets it; a flow's ID is stored only as
//     its SHA-256. SwapConnection is one conditional UPDATE on the old
//     blob (rekey never overwrites a refresh). Purge also deletes the
//     owner's connections, leases and flows (never the service ones,
//     subject "").
//
// # What is stored, and what never is
//
// Stored: server id, name, type, url (a remote server's URL; a stdio server
// stores an empty URL, or a non-secret identity such as the resolved
// command, never its environment), the last published catalogue (tool
// listing JSON), trust fingerprints and the contracts trusted, observed
// listings (their contracts, the changes against the baseline, the
// observing instance's name), journal records (fingerprints of calls, their
// outcomes, the owning subject), counters and approvals, and upstream
// connections: server, subject, times, the sealing key's ID and the token
// set sealed by package internal/vault (AES-256-GCM under a key the store
// never sees).
//
// Never stored in the clear: tokens, configured headers, auth resolver
// output, a command's environment, or any other secret. The store cannot see what a
// caller puts in opaque fields (catalogue, contract, changes, outcome); it
// refuses what it can recognise: PutServer rejects a URL whose userinfo
// carries a password.
//
// # Durability and its cost
//
// Options.Durability (or ?durability= in the DSN) says what a committed
// write survives:
//
//	process (default)  SQLite: WAL + synchronous=NORMAL. Survives a crash of the
//	                   process; the last commits may be lost on power loss or an
//	                   OS crash. PostgreSQL: the server's own synchronous_commit
//	                   (on by default).
//	power              SQLite: WAL + synchronous=FULL (fsync on every commit).
//	                   PostgreSQL: synchronous_commit=on on every connection.
//
// Every SQLite connection also runs busy_timeout (Options.BusyTimeout,
// default 10 s), foreign_keys=ON and BEGIN IMMEDIATE transactions; several
// processes may share one file on a local filesystem.
//
// Measured with BenchmarkClaimComplete (one claim plus one completion, two
// transactions, per op) on a 2-core AMD EPYC VM with a virtio disk, shared
// with other builds (load 5-15, so treat the figures as rough):
//
//	go test -run XXX -bench ClaimComplete -benchtime 3000x -count 3 ./store/sqlite/ ./store/postgres/
//
//	SQLite process (NORMAL)   66-95 µs per call
//	SQLite power   (FULL)     0.28-0.68 ms per call (fsync-bound)
//	PostgreSQL 15, loopback   67-123 µs per call, either setting: the test
//	                          cluster runs with fsync=off, so "power" costs
//	                          nothing there; on a real disk expect an fsync
//	                          per commit, as with SQLite FULL.
package store
