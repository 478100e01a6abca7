-- Certificate trust beyond the controller's own PKI: third-party CAs, external JWT signers, and the
-- authenticator columns that certificate extension and CA-issued certificates need.

CREATE TABLE cas (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  cert_pem TEXT NOT NULL,
  fingerprint TEXT NOT NULL UNIQUE,
  is_verified INTEGER NOT NULL DEFAULT 0,
  verification_token TEXT NOT NULL,
  is_auto_ca_enrollment_enabled INTEGER NOT NULL DEFAULT 0,
  is_ott_ca_enrollment_enabled INTEGER NOT NULL DEFAULT 0,
  is_auth_enabled INTEGER NOT NULL DEFAULT 0,
  identity_roles TEXT NOT NULL DEFAULT '[]',
  identity_name_format TEXT NOT NULL DEFAULT '',
  external_id_claim TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE external_jwt_signers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  issuer TEXT NOT NULL UNIQUE,
  audience TEXT,
  cert_pem TEXT,
  fingerprint TEXT UNIQUE,
  jwks_endpoint TEXT,
  kid TEXT,
  enabled INTEGER NOT NULL DEFAULT 1,
  claims_property TEXT,
  use_external_id INTEGER NOT NULL DEFAULT 0,
  external_auth_url TEXT,
  client_id TEXT,
  scopes TEXT,
  target_token TEXT,
  enroll_to_cert_enabled INTEGER NOT NULL DEFAULT 0,
  enroll_to_token_enabled INTEGER NOT NULL DEFAULT 0,
  enroll_name_claims_selector TEXT,
  enroll_attribute_claims_selector TEXT,
  enroll_auth_policy_id TEXT REFERENCES auth_policies(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

-- Certificate authenticators issued through a third-party CA (ottca / auto enrollment) remember it; deleting
-- the CA deletes them. A pending extension keeps the new certificate here until it is verified.
ALTER TABLE authenticators ADD COLUMN ca_id TEXT REFERENCES cas(id) ON DELETE CASCADE;
ALTER TABLE authenticators ADD COLUMN unverified_cert_pem TEXT;
ALTER TABLE authenticators ADD COLUMN unverified_fingerprint TEXT;
CREATE INDEX authenticators_ca ON authenticators(ca_id);
CREATE INDEX enrollments_ca ON enrollments(ca_id);
