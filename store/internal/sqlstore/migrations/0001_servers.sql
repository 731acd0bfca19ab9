-- 0001: server rows (the first released schema).
CREATE TABLE servers (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    type       TEXT NOT NULL,
    url        TEXT NOT NULL DEFAULT '',
    catalogue  {{BYTES}},
    updated_at BIGINT NOT NULL
);
