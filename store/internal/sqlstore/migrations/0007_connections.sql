-- 0007: the token vault. A connection is one sealed token set per (server,
-- subject); subject '' is a server's service connection. The store never
-- sees plaintext: sealed is what package identity/vault encrypted, key_id
-- names the key. Times are unix milliseconds.
CREATE TABLE connections (
    server     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    sealed     {{BYTES}} NOT NULL,
    key_id     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (subject, server)
);
-- The refresh lease of a connection: one refresher at a time across
-- replicas (taken by one conditional upsert).
CREATE TABLE connection_leases (
    server      TEXT NOT NULL,
    subject     TEXT NOT NULL,
    holder      TEXT NOT NULL,
    lease_until BIGINT NOT NULL,
    PRIMARY KEY (subject, server)
);
-- Pending /connect flows, single use: keyed by the SHA-256 (hex) of the
-- flow ID, so a copy of the store hands out no live flow.
CREATE TABLE connect_flows (
    id_hash    TEXT PRIMARY KEY,
    server     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    sealed     {{BYTES}}
);
CREATE INDEX connect_flows_subject ON connect_flows (subject);
CREATE INDEX connect_flows_expires ON connect_flows (expires_at);
