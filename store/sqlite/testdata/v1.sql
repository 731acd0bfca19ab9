-- A database as schema version 1 left it: server rows, no baselines,
-- journal, counters or approvals.
CREATE TABLE schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at BIGINT NOT NULL
);
INSERT INTO schema_migrations (version, name, applied_at) VALUES (1, '0001_servers', 1767225600000);
CREATE TABLE servers (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    type       TEXT NOT NULL,
    url        TEXT NOT NULL DEFAULT '',
    catalogue  BLOB,
    updated_at BIGINT NOT NULL
);
INSERT INTO servers (id, name, type, url, catalogue, updated_at) VALUES
  ('acme/bank', 'bank', 'http', 'https://bank.example/mcp', CAST('{"tools":[{"name":"transfer"}]}' AS BLOB), 1767225600123),
  ('acme/local', 'local', 'stdio', '', NULL, 1767225600456);
