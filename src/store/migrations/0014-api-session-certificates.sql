-- Ephemeral client certificates of an API session (`/current-api-session/certificates`): short-lived,
-- signed by the controller's signing CA, usable for certificate login while their API session lives, and
-- removed with it.
CREATE TABLE api_session_certificates (
  id TEXT PRIMARY KEY,
  api_session_id TEXT NOT NULL REFERENCES api_sessions(id) ON DELETE CASCADE,
  subject TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  valid_from TEXT NOT NULL,
  valid_to TEXT NOT NULL,
  certificate TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_session_certificates_session ON api_session_certificates(api_session_id);
CREATE INDEX api_session_certificates_fingerprint ON api_session_certificates(fingerprint);
