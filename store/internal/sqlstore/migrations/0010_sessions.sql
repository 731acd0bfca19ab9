-- 0010: callers' streamable HTTP sessions, shared by the replicas of one
-- store so that any of them serves any session. Keyed by the SHA-256 (hex)
-- of the session ID, so a copy of the store names no live session. state is
-- what rebuilding the session takes (opaque JSON); closed marks a session
-- ended by DELETE until it expires. Times are unix milliseconds.
CREATE TABLE sessions (
    id_hash    TEXT PRIMARY KEY,
    subject    TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    state      {{BYTES}},
    expires_at BIGINT NOT NULL,
    closed     BOOLEAN NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);
