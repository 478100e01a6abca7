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
