-- Platform schema: identities and how they authenticate, plus the built-in lookup records.
-- Times are TEXT in UTC, ISO-8601 with exactly three fraction digits (sortable as text).
-- JSON columns hold objects/arrays as text; role attributes are also kept in a side table so that
-- filters and policy matching can use an index.

CREATE TABLE identity_types (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE auth_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  primary_settings TEXT NOT NULL,
  secondary_settings TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE identities (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  type_id TEXT NOT NULL REFERENCES identity_types(id),
  is_admin INTEGER NOT NULL DEFAULT 0,
  is_default_admin INTEGER NOT NULL DEFAULT 0,
  auth_policy_id TEXT NOT NULL DEFAULT 'default' REFERENCES auth_policies(id),
  external_id TEXT UNIQUE,
  default_hosting_cost INTEGER NOT NULL DEFAULT 0,
  default_hosting_precedence TEXT NOT NULL DEFAULT 'default',
  service_hosting_costs TEXT NOT NULL DEFAULT '{}',
  service_hosting_precedences TEXT NOT NULL DEFAULT '{}',
  app_data TEXT NOT NULL DEFAULT '{}',
  permissions TEXT,
  role_attributes TEXT NOT NULL DEFAULT '[]',
  env_info TEXT NOT NULL DEFAULT '{}',
  sdk_info TEXT NOT NULL DEFAULT '{}',
  disabled_at TEXT,
  disabled_until TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX identities_created_at ON identities(created_at);
CREATE INDEX identities_updated_at ON identities(updated_at);
CREATE INDEX identities_auth_policy ON identities(auth_policy_id);

CREATE TABLE identity_role_attributes (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (identity_id, attribute)
) WITHOUT ROWID;
CREATE INDEX identity_role_attributes_by_attribute ON identity_role_attributes(attribute, identity_id);

CREATE TABLE authenticators (
  id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  method TEXT NOT NULL CHECK (method IN ('updb', 'cert')),
  username TEXT UNIQUE,
  password_hash TEXT,
  cert_pem TEXT,
  fingerprint TEXT UNIQUE,
  is_issued_by_network INTEGER NOT NULL DEFAULT 0,
  is_extend_requested INTEGER NOT NULL DEFAULT 0,
  is_key_roll_requested INTEGER NOT NULL DEFAULT 0,
  extend_requested_at TEXT,
  last_auth_resolved_to_root INTEGER NOT NULL DEFAULT 0,
  last_extend_rolled_keys INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX authenticators_identity ON authenticators(identity_id);
-- At most one authenticator of each method per identity.
CREATE UNIQUE INDEX authenticators_identity_method ON authenticators(identity_id, method);

CREATE TABLE api_sessions (
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  authenticator_id TEXT NOT NULL,
  ip_address TEXT NOT NULL DEFAULT '',
  config_types TEXT NOT NULL DEFAULT '[]',
  is_mfa_required INTEGER NOT NULL DEFAULT 0,
  is_mfa_complete INTEGER NOT NULL DEFAULT 0,
  is_cert_extendable INTEGER NOT NULL DEFAULT 0,
  is_cert_extend_requested INTEGER NOT NULL DEFAULT 0,
  is_cert_key_roll_requested INTEGER NOT NULL DEFAULT 0,
  improper_client_cert_chain INTEGER NOT NULL DEFAULT 0,
  last_activity_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_sessions_identity ON api_sessions(identity_id);
CREATE INDEX api_sessions_last_activity ON api_sessions(last_activity_at);

CREATE TABLE config_types (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  schema TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

-- Facts about this controller instance (e.g. its id) that must survive restarts.
CREATE TABLE controller_facts (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
