-- 0006: the audit trail. Entries are append-only and hash-chained per
-- chain (package audit computes the hashes; the store keeps them as given):
-- (chain, seq) is unique, id is the commit order across chains (the cursor
-- of a reader). Times are unix milliseconds, durations microseconds. The
-- blob comes last in the row.
CREATE TABLE audit_log (
    id          {{SERIAL}},
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
CREATE UNIQUE INDEX audit_log_chain ON audit_log (chain, seq);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_subject ON audit_log (subject, id);
-- Checkpoints: (chain, seq, hash), signed (Ed25519) when the writer holds a
-- key. Retention cuts a chain only behind one.
CREATE TABLE audit_checkpoints (
    chain     TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    hash      TEXT NOT NULL,
    at        BIGINT NOT NULL,
    key_id    TEXT NOT NULL,
    signature {{BYTES}},
    PRIMARY KEY (chain, seq)
);
