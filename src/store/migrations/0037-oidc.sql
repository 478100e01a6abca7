-- OIDC logins (src/oidc/). An API session started through /oidc is a row of api_sessions like any other, so that
-- ending it (logout, admin delete, identity disabled or deleted) ends its tokens on every process; it has a client
-- (`oidc_client_id`) and ends when its newest refresh token does (`expires_at`), not after an idle timeout. Its
-- token_hash hashes a random token nobody is given: it can never be used as a zt-session.
ALTER TABLE api_sessions ADD COLUMN oidc_client_id TEXT;
ALTER TABLE api_sessions ADD COLUMN expires_at TEXT;

-- Authorization requests between /oidc/authorize and the code's redemption, kept in the store so a flow may move
-- between processes. `data` is the request (JSON); `code_hash` the SHA-256 of the code once issued.
CREATE TABLE oidc_auth_requests (
  id TEXT PRIMARY KEY,
  data TEXT NOT NULL,
  code_hash TEXT UNIQUE,
  created_at TEXT NOT NULL
);
CREATE INDEX oidc_auth_requests_created ON oidc_auth_requests(created_at);
CREATE INDEX api_sessions_expires ON api_sessions(expires_at);
