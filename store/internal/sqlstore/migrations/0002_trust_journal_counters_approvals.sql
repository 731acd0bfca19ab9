-- 0002: trust baselines, the effect journal, counters and approvals.
ALTER TABLE servers ADD COLUMN baseline_version BIGINT NOT NULL DEFAULT 0;

CREATE TABLE baselines (
    server_id   TEXT NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
    tool        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (server_id, tool)
);

CREATE TABLE journal (
    scope        TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    state        TEXT NOT NULL,
    outcome      {{BYTES}},
    owner        TEXT NOT NULL,
    executor     TEXT NOT NULL,
    lease_until  BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (scope, run_id, tool_call_id)
);
CREATE INDEX journal_owner ON journal (owner);
CREATE INDEX journal_expires_at ON journal (expires_at);

CREATE TABLE counters (
    name       TEXT PRIMARY KEY,
    value      BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX counters_expires_at ON counters (expires_at);

CREATE TABLE approvals (
    id               TEXT PRIMARY KEY,
    scope            TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    tool_call_id     TEXT NOT NULL,
    server           TEXT NOT NULL,
    tool             TEXT NOT NULL,
    args_fingerprint TEXT NOT NULL,
    reason           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    state            TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    decided_at       BIGINT NOT NULL,
    decided_by       TEXT NOT NULL,
    UNIQUE (scope, run_id, tool_call_id)
);
CREATE INDEX approvals_state ON approvals (state, created_at);
CREATE INDEX approvals_owner ON approvals (owner);
