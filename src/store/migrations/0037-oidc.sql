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

-- Ended OIDC sessions, for routers: their tokens are checked by routers themselves, so an ended session is told to
-- them as a revocation in the router data model (2.0.3 routers close its connections; older ones keep it unused).
-- Written by the store when such a session's row goes, whatever removed it; kept until its tokens would have
-- expired anyway. Each one appends a change-feed row (kind `revocation`) for the router data model.
CREATE TABLE revocations (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  issued_before TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX revocations_expires ON revocations(expires_at);
CREATE TRIGGER api_sessions_revoke AFTER DELETE ON api_sessions
  WHEN OLD.oidc_client_id IS NOT NULL AND OLD.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
BEGIN
  INSERT OR REPLACE INTO revocations (id, type, expires_at, issued_before, created_at)
    VALUES (OLD.id, 'API_SESSION', OLD.expires_at, NULL, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER revocations_feed_insert AFTER INSERT ON revocations BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('revocation', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
