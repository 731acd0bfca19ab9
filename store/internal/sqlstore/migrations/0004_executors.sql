-- 0003: executors (the processes that claim journal records, and whether they are alive).
CREATE TABLE executors (
    id          TEXT PRIMARY KEY,
    instance    TEXT NOT NULL,
    started_at  BIGINT NOT NULL,
    alive_until BIGINT NOT NULL,
    stopped_at  BIGINT NOT NULL
);
CREATE INDEX executors_instance ON executors (instance, stopped_at);
