-- 0013: a keyed call writes fewer pages on SQLite (issue 36), where each
-- page a transaction dirties is a WAL frame written, and later copied back
-- by a checkpoint. PostgreSQL's schema is unchanged.
--
-- The journal's two indexes, on owner and on expires_at, become one on
-- (owner, expires_at): a claim inserts into three B-trees, not four. Purge
-- and the runs of one owner read its prefix; Sweep reads each owner's
-- expired range, the owners found by a skip scan of the same index.
--
-- audit_log's id becomes a plain INTEGER PRIMARY KEY (the row ID) instead
-- of AUTOINCREMENT, whose counter in sqlite_sequence was one more page
-- written by every transaction that appends an entry. A new entry's ID is
-- then one more than the greatest in the table, and IDs are still never
-- reused: the greatest is always the newest entry, the head of its chain,
-- which nothing deletes (retention keeps every chain's head). The table is
-- rebuilt (SQLite cannot change a column's key), every entry keeping its
-- ID.
-- only sqlite
DROP INDEX IF EXISTS journal_owner;
DROP INDEX IF EXISTS journal_expires_at;
CREATE INDEX journal_owner_expires ON journal (owner, expires_at);
CREATE TABLE audit_log_v13 (
    id          INTEGER PRIMARY KEY,
    chain       TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    subject     TEXT NOT NULL,
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args_digest TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    duration_us BIGINT NOT NULL,
    instance    TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL,
    detail      {{BYTES}}
);
INSERT INTO audit_log_v13 (id, chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail)
SELECT id, chain, seq, at, kind, subject, server, tool, args_digest, outcome, duration_us, instance, prev_hash, hash, detail FROM audit_log;
DROP TABLE audit_log;
ALTER TABLE audit_log_v13 RENAME TO audit_log;
CREATE UNIQUE INDEX audit_log_chain ON audit_log (chain, seq);
