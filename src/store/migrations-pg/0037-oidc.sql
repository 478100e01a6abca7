-- OIDC logins (the SQLite migration of the same number says why).
ALTER TABLE api_sessions ADD COLUMN oidc_client_id TEXT;
ALTER TABLE api_sessions ADD COLUMN expires_at TEXT;

CREATE TABLE oidc_auth_requests (
  id TEXT PRIMARY KEY,
  data JSONB NOT NULL,
  code_hash TEXT UNIQUE,
  created_at TEXT NOT NULL
);
CREATE INDEX oidc_auth_requests_created ON oidc_auth_requests(created_at);
CREATE INDEX api_sessions_expires ON api_sessions(expires_at);

-- Ended OIDC sessions, for routers (the SQLite migration of the same number says why).
CREATE TABLE revocations (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  issued_before TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX revocations_expires ON revocations(expires_at);
CREATE FUNCTION pc_api_sessions_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO revocations (id, type, expires_at, issued_before, created_at)
    VALUES (OLD.id, 'API_SESSION', OLD.expires_at, NULL, pc_now())
    ON CONFLICT (id) DO UPDATE SET type = EXCLUDED.type, expires_at = EXCLUDED.expires_at, issued_before = NULL, created_at = EXCLUDED.created_at;
  RETURN NULL;
END
$$;
CREATE TRIGGER api_sessions_revoke AFTER DELETE ON api_sessions FOR EACH ROW
  WHEN (OLD.oidc_client_id IS NOT NULL AND OLD.expires_at > pc_now())
  EXECUTE FUNCTION pc_api_sessions_revoke();
CREATE TRIGGER revocations_feed_insert AFTER INSERT ON revocations FOR EACH ROW EXECUTE FUNCTION pc_feed_id('revocation', 'set');
