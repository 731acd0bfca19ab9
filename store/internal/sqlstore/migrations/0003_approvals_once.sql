-- 0003: an approval authorizes one execution of one call. It keeps the
-- arguments as sent, the caller's key, when it expires and when it was
-- used, and every decision. The one-approval-per-call constraint becomes
-- one live approval (pending, approved or denied) per call, so the same
-- call may ask again once its approval is used or expired. The table is
-- rebuilt (SQLite cannot drop a constraint); rows are kept. An approval
-- asked before this version expires 24 hours after it was asked (the
-- default approvals.ttl); an approved one whose call has a journal record
-- was used by that call.
CREATE TABLE approvals_v3 (
    id               TEXT PRIMARY KEY,
    scope            TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    tool_call_id     TEXT NOT NULL,
    server           TEXT NOT NULL,
    tool             TEXT NOT NULL,
    args_fingerprint TEXT NOT NULL,
    args             {{BYTES}},
    caller_key       TEXT NOT NULL DEFAULT '',
    reason           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    state            TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    decided_at       BIGINT NOT NULL,
    decided_by       TEXT NOT NULL,
    used_at          BIGINT NOT NULL DEFAULT 0
);
INSERT INTO approvals_v3 (id, scope, run_id, tool_call_id, server, tool, args_fingerprint, reason, owner, state,
    created_at, expires_at, decided_at, decided_by)
SELECT id, scope, run_id, tool_call_id, server, tool, args_fingerprint, reason, owner, state,
    created_at, created_at + 86400000, decided_at, decided_by
FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_v3 RENAME TO approvals;
CREATE UNIQUE INDEX approvals_live ON approvals (scope, run_id, tool_call_id) WHERE state IN ('pending', 'approved', 'denied');
CREATE INDEX approvals_state ON approvals (state, created_at);
CREATE INDEX approvals_owner ON approvals (owner, state);
CREATE INDEX approvals_expires_at ON approvals (expires_at);

CREATE TABLE approval_decisions (
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    verdict     TEXT NOT NULL,
    decided_by  TEXT NOT NULL,
    decided_at  BIGINT NOT NULL,
    PRIMARY KEY (approval_id, seq)
);
INSERT INTO approval_decisions (approval_id, seq, verdict, decided_by, decided_at)
SELECT id, 1, state, decided_by, decided_at FROM approvals WHERE decided_at <> 0 AND state IN ('approved', 'denied');
UPDATE approvals SET state = 'used', used_at = decided_at
WHERE state = 'approved' AND EXISTS (SELECT 1 FROM journal j
    WHERE j.scope = approvals.scope AND j.run_id = approvals.run_id AND j.tool_call_id = approvals.tool_call_id);

-- One row per subject that asked for an approval: CreateApproval locks it
-- so that the bound on a subject's pending approvals holds across
-- processes.
CREATE TABLE approval_owners (
    owner TEXT PRIMARY KEY
);
