-- The access model: services and their configs, routers and terminators, the three policy kinds,
-- posture checks, sessions, enrollments and the per-identity change marks behind service-updates.
-- Role lists of policies are JSON columns for reads and rows of `policy_roles` for indexed filters.

CREATE TABLE configs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  -- No cascade: a config type can not be deleted while configs of it exist (409).
  config_type_id TEXT NOT NULL REFERENCES config_types(id),
  data TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX configs_type ON configs(config_type_id);

CREATE TABLE services (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  terminator_strategy TEXT NOT NULL DEFAULT 'smartrouting',
  encryption_required INTEGER NOT NULL DEFAULT 1,
  max_idle_time_millis INTEGER NOT NULL DEFAULT 0,
  role_attributes TEXT NOT NULL DEFAULT '[]',
  configs TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE service_role_attributes (
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (service_id, attribute)
) WITHOUT ROWID;
CREATE INDEX service_role_attributes_by_attribute ON service_role_attributes(attribute, service_id);

-- The configs a service references (mirrors services.configs; deleting a config removes its rows).
CREATE TABLE service_configs (
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  config_id TEXT NOT NULL REFERENCES configs(id) ON DELETE CASCADE,
  PRIMARY KEY (service_id, config_id)
) WITHOUT ROWID;
CREATE INDEX service_configs_by_config ON service_configs(config_id, service_id);

-- An identity's per-service config overrides: at most one config per (identity, service, config type).
CREATE TABLE identity_service_configs (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  config_type_id TEXT NOT NULL,
  config_id TEXT NOT NULL REFERENCES configs(id),
  PRIMARY KEY (identity_id, service_id, config_type_id)
) WITHOUT ROWID;
CREATE INDEX identity_service_configs_by_config ON identity_service_configs(config_id);

-- Every router: edge routers (is_edge = 1) and transit routers share one table and one name index.
CREATE TABLE routers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  is_edge INTEGER NOT NULL DEFAULT 0,
  is_tunneler_enabled INTEGER NOT NULL DEFAULT 0,
  cost INTEGER NOT NULL DEFAULT 0,
  no_traversal INTEGER NOT NULL DEFAULT 0,
  disabled INTEGER NOT NULL DEFAULT 0,
  app_data TEXT NOT NULL DEFAULT '{}',
  ctrl_chan_listeners TEXT,
  role_attributes TEXT NOT NULL DEFAULT '[]',
  is_verified INTEGER NOT NULL DEFAULT 0,
  fingerprint TEXT,
  cert_pem TEXT,
  unverified_fingerprint TEXT,
  unverified_cert_pem TEXT,
  hostname TEXT NOT NULL DEFAULT '',
  supported_protocols TEXT NOT NULL DEFAULT '{}',
  version_info TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX routers_edge ON routers(is_edge, id);

CREATE TABLE router_role_attributes (
  router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (router_id, attribute)
) WITHOUT ROWID;
CREATE INDEX router_role_attributes_by_attribute ON router_role_attributes(attribute, router_id);

CREATE TABLE terminators (
  id TEXT PRIMARY KEY,
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  binding TEXT NOT NULL,
  address TEXT NOT NULL,
  instance_id TEXT NOT NULL DEFAULT '',
  instance_secret TEXT,
  cost INTEGER NOT NULL DEFAULT 0,
  precedence TEXT NOT NULL DEFAULT 'default',
  host_id TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX terminators_service ON terminators(service_id);
CREATE INDEX terminators_router ON terminators(router_id);

-- Enrollments of identities (ott, ottca, updb) and routers (erott, trott).
CREATE TABLE enrollments (
  id TEXT PRIMARY KEY,
  method TEXT NOT NULL CHECK (method IN ('ott', 'ottca', 'updb', 'erott', 'trott')),
  identity_id TEXT REFERENCES identities(id) ON DELETE CASCADE,
  router_id TEXT REFERENCES routers(id) ON DELETE CASCADE,
  ca_id TEXT,
  username TEXT,
  token TEXT NOT NULL UNIQUE,
  jwt TEXT NOT NULL,
  issued_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0,
  CHECK ((identity_id IS NULL) <> (router_id IS NULL))
);
CREATE INDEX enrollments_identity ON enrollments(identity_id);
CREATE INDEX enrollments_router ON enrollments(router_id);

CREATE TABLE service_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  policy_type TEXT NOT NULL CHECK (policy_type IN ('Dial', 'Bind')),
  semantic TEXT NOT NULL DEFAULT 'AllOf',
  identity_roles TEXT NOT NULL DEFAULT '[]',
  service_roles TEXT NOT NULL DEFAULT '[]',
  posture_check_roles TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE edge_router_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  semantic TEXT NOT NULL DEFAULT 'AllOf',
  identity_roles TEXT NOT NULL DEFAULT '[]',
  edge_router_roles TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE service_edge_router_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  semantic TEXT NOT NULL DEFAULT 'AllOf',
  service_roles TEXT NOT NULL DEFAULT '[]',
  edge_router_roles TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

-- One row per role entry of a policy, for filters such as anyOf(identityRoles) = "#sales".
-- policy_id is unique across the three policy tables (random ids), so no FK; the policy services
-- rewrite the rows with the JSON columns.
CREATE TABLE policy_roles (
  policy_id TEXT NOT NULL,
  field TEXT NOT NULL,
  role TEXT NOT NULL,
  PRIMARY KEY (policy_id, field, role)
) WITHOUT ROWID;
CREATE INDEX policy_roles_by_role ON policy_roles(role, field);

CREATE TABLE posture_check_types (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  operating_systems TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE posture_checks (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  type_id TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  role_attributes TEXT NOT NULL DEFAULT '[]',
  -- Type-specific fields (operatingSystems, macAddresses, domains, process, processes, semantic,
  -- timeoutSeconds, promptOnWake, promptOnUnlock, ignoreLegacyEndpoints).
  details TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE posture_check_role_attributes (
  posture_check_id TEXT NOT NULL REFERENCES posture_checks(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (posture_check_id, attribute)
) WITHOUT ROWID;
CREATE INDEX posture_check_role_attributes_by_attribute ON posture_check_role_attributes(attribute, posture_check_id);

-- Edge sessions: tied to an API session, removed with it, with the service and with the identity.
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  token TEXT NOT NULL UNIQUE,
  session_type TEXT NOT NULL CHECK (session_type IN ('Dial', 'Bind')),
  api_session_id TEXT NOT NULL REFERENCES api_sessions(id) ON DELETE CASCADE,
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0,
  UNIQUE (api_session_id, service_id, session_type)
);
CREATE INDEX sessions_identity ON sessions(identity_id);
CREATE INDEX sessions_service ON sessions(service_id);

-- When the services an identity sees last changed (GET /current-api-session/service-updates).
CREATE TABLE identity_service_marks (
  identity_id TEXT PRIMARY KEY REFERENCES identities(id) ON DELETE CASCADE,
  changed_at TEXT NOT NULL
) WITHOUT ROWID;
