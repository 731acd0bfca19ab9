-- 0009: a connection records whose upstream account it holds: the upstream
-- identity provider's subject (the ID token's sub, else userinfo's) as the
-- gateway saw it when the connection was made; '' when unknown (service
-- connections, connections made before this version).
ALTER TABLE connections ADD COLUMN account TEXT NOT NULL DEFAULT '';
