-- 0005: baseline entries have a kind (tool, prompt, template, instructions,
-- marker) and keep the contract they trusted, so any name a server
-- publishes is pinned: a tool named with a space, or like a prompt, is
-- still a tool. The table is rebuilt (SQLite cannot alter a primary key);
-- each row moves by its old one-string key:
--   ''                           -> (instructions, '')
--   'prompt ' || X               -> (prompt, X)
--   'resource-template ' || X    -> (template, X)
--   'pinned prompts'             -> (marker, 'prompts')
--   'pinned resource-templates'  -> (marker, 'templates')
--   anything else                -> (tool, key)
-- Values and baseline versions are kept: nobody has to re-trust. The
-- prefixes are compared with substr, not LIKE ('_' is a wildcard and
-- SQLite's LIKE ignores ASCII case); both engines count characters.
CREATE TABLE baselines_v5 (
    server_id  TEXT NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    contract   {{BYTES}},
    created_at BIGINT NOT NULL,
    PRIMARY KEY (server_id, kind, name)
);
INSERT INTO baselines_v5 (server_id, kind, name, value, contract, created_at)
SELECT server_id,
    CASE
        WHEN tool = '' THEN 'instructions'
        WHEN tool = 'pinned prompts' THEN 'marker'
        WHEN tool = 'pinned resource-templates' THEN 'marker'
        WHEN substr(tool, 1, 7) = 'prompt ' THEN 'prompt'
        WHEN substr(tool, 1, 18) = 'resource-template ' THEN 'template'
        ELSE 'tool'
    END,
    CASE
        WHEN tool = '' THEN ''
        WHEN tool = 'pinned prompts' THEN 'prompts'
        WHEN tool = 'pinned resource-templates' THEN 'templates'
        WHEN substr(tool, 1, 7) = 'prompt ' THEN substr(tool, 8)
        WHEN substr(tool, 1, 18) = 'resource-template ' THEN substr(tool, 19)
        ELSE tool
    END,
    fingerprint, NULL, created_at
FROM baselines;
DROP TABLE baselines;
ALTER TABLE baselines_v5 RENAME TO baselines;

-- What instances observe of their servers' listings: the fleet's record of
-- drift. entries is the observed listing as a baseline (a JSON array of
-- {kind, name, value, contract}); changes is the toolset's JSON, opaque
-- here. An observation is open while it is its instance's latest under the
-- server's current baseline_version and not trusted (trusted_at 0).
CREATE TABLE observations (
    id               {{SERIAL}},
    server_id        TEXT NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
    listing          TEXT NOT NULL,
    baseline_version BIGINT NOT NULL,
    seen_by          TEXT NOT NULL,
    seen_at          BIGINT NOT NULL,
    last_seen_at     BIGINT NOT NULL,
    drifted          BOOLEAN NOT NULL,
    trusted_at       BIGINT NOT NULL DEFAULT 0,
    changes          {{BYTES}},
    entries          {{BYTES}} NOT NULL
);
-- The observations under a server's version, by instance: each instance's
-- latest (ObserveListing, OpenObservations, TrustListing) without reading
-- the rows of older versions. The blobs come last in the row, so reading
-- the other columns never walks a blob's overflow pages (SQLite).
CREATE INDEX observations_instance ON observations (server_id, baseline_version, seen_by, id);
-- A server's observations by ID (DriftHeads, the cascade of DeleteServer).
CREATE INDEX observations_server ON observations (server_id, id);
