-- TOTP MFA: at most one record per identity (unverified until the first code is verified), and when each
-- API session last passed MFA (read by MFA posture checks).
CREATE TABLE mfas (
  id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL UNIQUE REFERENCES identities(id) ON DELETE CASCADE,
  secret TEXT NOT NULL,
  is_verified INTEGER NOT NULL DEFAULT 0,
  recovery_codes TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

ALTER TABLE api_sessions ADD COLUMN mfa_passed_at TEXT;
