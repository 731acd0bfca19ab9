package sqlite

// sweepQuery is Sweep's statement on SQLite (sqlstore.Options.SweepQuery):
// it deletes the expired journal records owner by owner. Since schema
// version 13 the journal has one index for both, on (owner, expires_at),
// which a claim writes instead of two. The owners are found by a skip scan
// of that index (each the least owner after the last, one seek each), and
// each owner's expired records are a range of it: the statement reads the
// owners and the records it deletes, not the journal.
const sweepQuery = `WITH RECURSIVE owners(owner) AS (
 SELECT MIN(owner) FROM journal
 UNION ALL
 SELECT (SELECT MIN(j.owner) FROM journal AS j WHERE j.owner > owners.owner) FROM owners WHERE owners.owner IS NOT NULL)
DELETE FROM journal WHERE owner IN (SELECT owner FROM owners) AND expires_at <> 0 AND expires_at <= $1`
