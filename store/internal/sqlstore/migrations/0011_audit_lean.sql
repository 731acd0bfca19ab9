-- 0011: an audit entry is written into two B-trees, not four: the table
-- (by id, the commit order) and its (chain, seq) index, which every write
-- and the verifier use. The indexes on (at) and (subject, id) go: they cost
-- every entry (a tenth to a quarter of its insert on SQLite, issue 36) and
-- served only an operator's filtered reads (ListAudit by subject or time:
-- the console's pages, gatehouse audit export --subject/--since), which
-- now read the table in id order, the order they return, bounded by
-- retention.
DROP INDEX IF EXISTS audit_log_at;
DROP INDEX IF EXISTS audit_log_subject;
