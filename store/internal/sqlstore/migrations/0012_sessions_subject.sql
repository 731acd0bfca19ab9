-- 0012: a subject's live sessions are counted at each initialize (the
-- session cap, shared by replicas).
CREATE INDEX sessions_subject ON sessions (subject, expires_at);
