-- 0014: SQLite keeps its audit trail in blocks (issue 36): a row of
-- audit_blocks holds a run of one chain's entries, encoded by
-- store/internal/auditblock, where audit_log held a row an entry. What an
-- entry's own row cost on SQLite (14 bound values, an insert into the
-- table and one into the (chain, seq) index: 5.7-7.6 µs of CPU) a block
-- pays once; the audit writer's batch, or a group commit's entries of one
-- chain, is one block. PostgreSQL's schema is unchanged.
--
-- The row says the chain, the first and last Seq, the last entry's hash
-- (a chain's head, read without decoding) and, as its row ID, the first
-- entry's ID (its entries' IDs follow it by one). The unique index on
-- (chain, first_seq) finds a chain's head and the block that holds a Seq,
-- and refuses a second block after the same head (another writer).
--
-- Every entry of audit_log becomes a block of one, in the JSON form (each
-- text as the hex of its bytes: nothing changes on the way, as the hashes
-- cover the bytes), keeping its ID.
-- only sqlite
CREATE TABLE audit_blocks (
    id        INTEGER PRIMARY KEY,
    chain     TEXT NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq  BIGINT NOT NULL,
    last_hash TEXT NOT NULL,
    data      BLOB NOT NULL
);
CREATE UNIQUE INDEX audit_blocks_chain ON audit_blocks (chain, first_seq);
INSERT INTO audit_blocks (id, chain, first_seq, last_seq, last_hash, data)
SELECT id, chain, seq, seq, hash, CAST('J' || json_array(json_array(at, hex(kind), hex(subject), hex(server), hex(tool), hex(args_digest),
    hex(outcome), duration_us, hex(instance), hex(prev_hash), hex(hash), CASE WHEN detail IS NULL THEN NULL ELSE hex(detail) END)) AS BLOB)
FROM audit_log;
DROP TABLE audit_log;
