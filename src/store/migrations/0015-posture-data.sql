-- Posture data reported by clients (posture responses) and the session requests refused for posture.
-- Upstream keeps these only in memory; here they live in the store so every process sees the same data.

-- The latest OS, MAC and DOMAIN response of each identity (shared by all of its API sessions).
CREATE TABLE posture_responses (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  type_id TEXT NOT NULL CHECK (type_id IN ('OS', 'MAC', 'DOMAIN')),
  posture_check_id TEXT NOT NULL,
  data TEXT NOT NULL,
  last_updated_at TEXT NOT NULL,
  PRIMARY KEY (identity_id, type_id)
) WITHOUT ROWID;

-- PROCESS responses: the newest per (check id, path). PROCESS checks read the newest row of their check
-- id; PROCESS_MULTI checks the newest row of each path; `seq` orders the rows of one identity.
CREATE TABLE posture_processes (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  posture_check_id TEXT NOT NULL,
  path TEXT NOT NULL,
  is_running INTEGER NOT NULL,
  binary_hash TEXT NOT NULL,
  signer_fingerprints TEXT NOT NULL DEFAULT '[]',
  last_updated_at TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (identity_id, posture_check_id, path)
) WITHOUT ROWID;

-- Endpoint state (woken / unlocked) per API session; the MFA pass time is api_sessions.mfa_passed_at.
CREATE TABLE posture_endpoint_states (
  api_session_id TEXT PRIMARY KEY REFERENCES api_sessions(id) ON DELETE CASCADE,
  woken_at TEXT,
  unlocked_at TEXT
);

-- Session requests refused for posture, the last 100 per identity (a JSON failedServiceRequest each).
CREATE TABLE posture_failed_service_requests (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  data TEXT NOT NULL
);
CREATE INDEX posture_failed_service_requests_identity ON posture_failed_service_requests(identity_id, seq);
