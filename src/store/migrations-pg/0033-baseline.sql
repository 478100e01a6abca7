-- The PostgreSQL schema as of migration 0033: the same tables, columns (in the same order), constraints, indexes,
-- seed rows and trigger effects as SQLite after src/store/migrations/0001..0033. Later migrations come in pairs,
-- one file per dialect under the same number, so a PostgreSQL store at version N has exactly SQLite's schema N.
--
-- Type mapping (the contract of src/query/README.md): booleans SMALLINT 0/1; integers INTEGER, or BIGINT where a
-- value may pass 2^31 (sequence numbers, counters, milliseconds, nanoseconds, iterations); datetimes TEXT
-- `YYYY-MM-DDTHH:MM:SS.mmmZ`; JSON objects and lists JSONB (the store hands them back as text, which the code
-- parses), except database_ops_state.results, which the code compares as text ('[]'); AUTOINCREMENT keys are
-- identity columns. The database must be UTF-8 with the C.UTF-8 locale (code point order, as SQLite's BINARY).
--
-- Triggers: SQLite's row triggers become row triggers calling the PL/pgSQL functions below, under the same names,
-- for the same statements (an UPDATE OF list fires when a listed column is assigned, as in SQLite; WHEN OLD.x IS
-- NOT NEW.x becomes IS DISTINCT FROM). The link cost and down flag (0031, 0033), which SQLite sets with an UPDATE
-- after the row is written, are set here before it is written: the same stored values, one row version.

-- The time SQLite's strftime('%Y-%m-%dT%H:%M:%fZ', 'now') gives inside a statement.
CREATE FUNCTION pc_now() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- ---- platform (0001) ----------------------------------------------------------------------------------------------

CREATE TABLE identity_types (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 1
);

CREATE TABLE auth_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  primary_settings JSONB NOT NULL,
  secondary_settings JSONB NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

CREATE TABLE identities (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  type_id TEXT NOT NULL REFERENCES identity_types(id),
  is_admin SMALLINT NOT NULL DEFAULT 0,
  is_default_admin SMALLINT NOT NULL DEFAULT 0,
  auth_policy_id TEXT NOT NULL DEFAULT 'default' REFERENCES auth_policies(id),
  external_id TEXT UNIQUE,
  default_hosting_cost INTEGER NOT NULL DEFAULT 0,
  default_hosting_precedence TEXT NOT NULL DEFAULT 'default',
  service_hosting_costs JSONB NOT NULL DEFAULT '{}',
  service_hosting_precedences JSONB NOT NULL DEFAULT '{}',
  app_data JSONB NOT NULL DEFAULT '{}',
  permissions JSONB,
  role_attributes JSONB NOT NULL DEFAULT '[]',
  env_info JSONB NOT NULL DEFAULT '{}',
  sdk_info JSONB NOT NULL DEFAULT '{}',
  disabled_at TEXT,
  disabled_until TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX identities_created_at ON identities(created_at);
CREATE INDEX identities_updated_at ON identities(updated_at);
CREATE INDEX identities_auth_policy ON identities(auth_policy_id);

CREATE TABLE identity_role_attributes (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (identity_id, attribute)
);
CREATE INDEX identity_role_attributes_by_attribute ON identity_role_attributes(attribute, identity_id);

-- Third-party CAs (0008), here before the authenticators that reference them.
CREATE TABLE cas (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  cert_pem TEXT NOT NULL,
  fingerprint TEXT NOT NULL UNIQUE,
  is_verified SMALLINT NOT NULL DEFAULT 0,
  verification_token TEXT NOT NULL,
  is_auto_ca_enrollment_enabled SMALLINT NOT NULL DEFAULT 0,
  is_ott_ca_enrollment_enabled SMALLINT NOT NULL DEFAULT 0,
  is_auth_enabled SMALLINT NOT NULL DEFAULT 0,
  identity_roles JSONB NOT NULL DEFAULT '[]',
  identity_name_format TEXT NOT NULL DEFAULT '',
  external_id_claim JSONB,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  trust_rights JSONB NOT NULL DEFAULT '{"isAdmin":false,"permissions":[]}'
);

CREATE TABLE authenticators (
  id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  method TEXT NOT NULL CHECK (method IN ('updb', 'cert')),
  username TEXT UNIQUE,
  password_hash TEXT,
  cert_pem TEXT,
  fingerprint TEXT UNIQUE,
  is_issued_by_network SMALLINT NOT NULL DEFAULT 0,
  is_extend_requested SMALLINT NOT NULL DEFAULT 0,
  is_key_roll_requested SMALLINT NOT NULL DEFAULT 0,
  extend_requested_at TEXT,
  last_auth_resolved_to_root SMALLINT NOT NULL DEFAULT 0,
  last_extend_rolled_keys SMALLINT NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  ca_id TEXT REFERENCES cas(id) ON DELETE CASCADE,
  unverified_cert_pem TEXT,
  unverified_fingerprint TEXT,
  failed_attempts INTEGER NOT NULL DEFAULT 0
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
  config_types JSONB NOT NULL DEFAULT '[]',
  is_mfa_required SMALLINT NOT NULL DEFAULT 0,
  is_mfa_complete SMALLINT NOT NULL DEFAULT 0,
  is_cert_extendable SMALLINT NOT NULL DEFAULT 0,
  is_cert_extend_requested SMALLINT NOT NULL DEFAULT 0,
  is_cert_key_roll_requested SMALLINT NOT NULL DEFAULT 0,
  improper_client_cert_chain SMALLINT NOT NULL DEFAULT 0,
  last_activity_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  mfa_passed_at TEXT,
  sealed_token TEXT
);
CREATE INDEX api_sessions_identity ON api_sessions(identity_id);
CREATE INDEX api_sessions_last_activity ON api_sessions(last_activity_at);

CREATE TABLE config_types (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  schema JSONB,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

-- ---- controllers (0002) -------------------------------------------------------------------------------------------

CREATE TABLE controller_facts (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE controllers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  cert_pem TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  ctrl_address TEXT,
  api_addresses JSONB NOT NULL DEFAULT '{}',
  is_online SMALLINT NOT NULL DEFAULT 0,
  last_joined_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  is_preferred_leader SMALLINT NOT NULL DEFAULT 0
);

-- ---- access (0003) ------------------------------------------------------------------------------------------------

CREATE TABLE configs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  -- No cascade: a config type can not be deleted while configs of it exist (409).
  config_type_id TEXT NOT NULL REFERENCES config_types(id),
  data JSONB NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX configs_type ON configs(config_type_id);

CREATE TABLE services (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  terminator_strategy TEXT NOT NULL DEFAULT 'smartrouting',
  encryption_required SMALLINT NOT NULL DEFAULT 1,
  max_idle_time_millis BIGINT NOT NULL DEFAULT 0,
  role_attributes JSONB NOT NULL DEFAULT '[]',
  configs JSONB NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

CREATE TABLE service_role_attributes (
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (service_id, attribute)
);
CREATE INDEX service_role_attributes_by_attribute ON service_role_attributes(attribute, service_id);

CREATE TABLE service_configs (
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  config_id TEXT NOT NULL REFERENCES configs(id) ON DELETE CASCADE,
  PRIMARY KEY (service_id, config_id)
);
CREATE INDEX service_configs_by_config ON service_configs(config_id, service_id);

CREATE TABLE identity_service_configs (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  config_type_id TEXT NOT NULL,
  config_id TEXT NOT NULL REFERENCES configs(id),
  PRIMARY KEY (identity_id, service_id, config_type_id)
);
CREATE INDEX identity_service_configs_by_config ON identity_service_configs(config_id);

CREATE TABLE routers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  is_edge SMALLINT NOT NULL DEFAULT 0,
  is_tunneler_enabled SMALLINT NOT NULL DEFAULT 0,
  cost INTEGER NOT NULL DEFAULT 0,
  no_traversal SMALLINT NOT NULL DEFAULT 0,
  disabled SMALLINT NOT NULL DEFAULT 0,
  app_data JSONB NOT NULL DEFAULT '{}',
  ctrl_chan_listeners JSONB,
  role_attributes JSONB NOT NULL DEFAULT '[]',
  is_verified SMALLINT NOT NULL DEFAULT 0,
  fingerprint TEXT,
  cert_pem TEXT,
  unverified_fingerprint TEXT,
  unverified_cert_pem TEXT,
  hostname TEXT NOT NULL DEFAULT '',
  supported_protocols JSONB NOT NULL DEFAULT '{}',
  version_info JSONB,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX routers_edge ON routers(is_edge, id);

CREATE TABLE router_role_attributes (
  router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (router_id, attribute)
);
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
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  source_ctrl TEXT,
  peer_data JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX terminators_service ON terminators(service_id);
CREATE INDEX terminators_router ON terminators(router_id);

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
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  CHECK ((identity_id IS NULL) <> (router_id IS NULL))
);
CREATE INDEX enrollments_identity ON enrollments(identity_id);
CREATE INDEX enrollments_router ON enrollments(router_id);

CREATE TABLE service_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  policy_type TEXT NOT NULL CHECK (policy_type IN ('Dial', 'Bind')),
  semantic TEXT NOT NULL DEFAULT 'AllOf',
  identity_roles JSONB NOT NULL DEFAULT '[]',
  service_roles JSONB NOT NULL DEFAULT '[]',
  posture_check_roles JSONB NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

CREATE TABLE edge_router_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  semantic TEXT NOT NULL DEFAULT 'AllOf',
  identity_roles JSONB NOT NULL DEFAULT '[]',
  edge_router_roles JSONB NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

CREATE TABLE service_edge_router_policies (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  semantic TEXT NOT NULL DEFAULT 'AllOf',
  service_roles JSONB NOT NULL DEFAULT '[]',
  edge_router_roles JSONB NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

-- policy_id is unique across the three policy tables (random ids), so no FK.
CREATE TABLE policy_roles (
  policy_id TEXT NOT NULL,
  field TEXT NOT NULL,
  role TEXT NOT NULL,
  PRIMARY KEY (policy_id, field, role)
);
CREATE INDEX policy_roles_by_role ON policy_roles(role, field);

CREATE TABLE posture_check_types (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  operating_systems JSONB NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 1
);

CREATE TABLE posture_checks (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  type_id TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1,
  role_attributes JSONB NOT NULL DEFAULT '[]',
  details JSONB NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

CREATE TABLE posture_check_role_attributes (
  posture_check_id TEXT NOT NULL REFERENCES posture_checks(id) ON DELETE CASCADE,
  attribute TEXT NOT NULL,
  PRIMARY KEY (posture_check_id, attribute)
);
CREATE INDEX posture_check_role_attributes_by_attribute ON posture_check_role_attributes(attribute, posture_check_id);

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  token TEXT NOT NULL UNIQUE,
  session_type TEXT NOT NULL CHECK (session_type IN ('Dial', 'Bind')),
  api_session_id TEXT NOT NULL REFERENCES api_sessions(id) ON DELETE CASCADE,
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  service_id TEXT NOT NULL REFERENCES services(id) ON DELETE CASCADE,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  service_policies JSONB NOT NULL DEFAULT '[]',
  UNIQUE (api_session_id, service_id, session_type)
);
CREATE INDEX sessions_identity ON sessions(identity_id);
CREATE INDEX sessions_service ON sessions(service_id);

CREATE TABLE identity_service_marks (
  identity_id TEXT PRIMARY KEY REFERENCES identities(id) ON DELETE CASCADE,
  changed_at TEXT NOT NULL
);

-- ---- trust (0008, 0011, 0032) -------------------------------------------------------------------------------------

CREATE TABLE external_jwt_signers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  issuer TEXT NOT NULL UNIQUE,
  audience TEXT,
  cert_pem TEXT,
  fingerprint TEXT UNIQUE,
  jwks_endpoint TEXT,
  kid TEXT,
  enabled SMALLINT NOT NULL DEFAULT 1,
  claims_property TEXT,
  use_external_id SMALLINT NOT NULL DEFAULT 0,
  external_auth_url TEXT,
  client_id TEXT,
  scopes JSONB,
  target_token TEXT,
  enroll_to_cert_enabled SMALLINT NOT NULL DEFAULT 0,
  enroll_to_token_enabled SMALLINT NOT NULL DEFAULT 0,
  enroll_name_claims_selector TEXT,
  enroll_attribute_claims_selector TEXT,
  enroll_auth_policy_id TEXT REFERENCES auth_policies(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  trust_rights JSONB NOT NULL DEFAULT '{"isAdmin":false,"permissions":[]}'
);
CREATE INDEX authenticators_ca ON authenticators(ca_id);
CREATE INDEX enrollments_ca ON enrollments(ca_id);
CREATE UNIQUE INDEX external_jwt_signers_kid ON external_jwt_signers(kid) WHERE kid IS NOT NULL;

-- ---- MFA (0012) ---------------------------------------------------------------------------------------------------

CREATE TABLE mfas (
  id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL UNIQUE REFERENCES identities(id) ON DELETE CASCADE,
  secret TEXT NOT NULL,
  is_verified SMALLINT NOT NULL DEFAULT 0,
  recovery_codes JSONB NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);

-- ---- API session certificates (0014) ------------------------------------------------------------------------------

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
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX api_session_certificates_session ON api_session_certificates(api_session_id);
CREATE INDEX api_session_certificates_fingerprint ON api_session_certificates(fingerprint);

-- ---- posture data (0015) ------------------------------------------------------------------------------------------

CREATE TABLE posture_responses (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  type_id TEXT NOT NULL CHECK (type_id IN ('OS', 'MAC', 'DOMAIN')),
  posture_check_id TEXT NOT NULL,
  data JSONB NOT NULL,
  last_updated_at TEXT NOT NULL,
  PRIMARY KEY (identity_id, type_id)
);

CREATE TABLE posture_processes (
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  posture_check_id TEXT NOT NULL,
  path TEXT NOT NULL,
  is_running SMALLINT NOT NULL,
  binary_hash TEXT NOT NULL,
  signer_fingerprints JSONB NOT NULL DEFAULT '[]',
  last_updated_at TEXT NOT NULL,
  seq BIGINT NOT NULL,
  PRIMARY KEY (identity_id, posture_check_id, path)
);

CREATE TABLE posture_endpoint_states (
  api_session_id TEXT PRIMARY KEY REFERENCES api_sessions(id) ON DELETE CASCADE,
  woken_at TEXT,
  unlocked_at TEXT
);

CREATE TABLE posture_failed_service_requests (
  seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
  data JSONB NOT NULL
);
CREATE INDEX posture_failed_service_requests_identity ON posture_failed_service_requests(identity_id, seq);

-- ---- controller settings (0016) -----------------------------------------------------------------------------------

CREATE TABLE controller_settings (
  id TEXT PRIMARY KEY,
  controller_id TEXT UNIQUE REFERENCES controllers(id) ON DELETE CASCADE,
  oidc JSONB,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags JSONB NOT NULL DEFAULT '{}',
  is_system SMALLINT NOT NULL DEFAULT 0,
  CHECK ((id = 'global' AND controller_id IS NULL) OR id = controller_id)
);
INSERT INTO controller_settings (id, controller_id, oidc, created_at, updated_at, is_system)
VALUES ('global', NULL, NULL, pc_now(), pc_now(), 1);

-- ---- change feed and database operations (0017) -------------------------------------------------------------------

-- `seq` only grows, never reused (an identity sequence); writers hold the store's write lock from BEGIN to COMMIT,
-- so seq order is commit order.
CREATE TABLE change_feed (
  seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  kind TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  op TEXT NOT NULL CHECK (op IN ('set', 'remove', 'reload')),
  origin TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX change_feed_created ON change_feed(created_at);

CREATE TABLE change_feed_trim (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  trimmed_through BIGINT NOT NULL
);
INSERT INTO change_feed_trim (id, trimmed_through) VALUES (1, 0);

CREATE TABLE database_ops_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  run_owner TEXT,
  in_progress SMALLINT NOT NULL DEFAULT 0,
  fixing_errors SMALLINT NOT NULL DEFAULT 0,
  too_many_errors SMALLINT NOT NULL DEFAULT 0,
  start_time TEXT,
  end_time TEXT,
  error TEXT,
  -- JSON, kept as text: the code compares it with '[]'.
  results TEXT,
  last_snapshot_at TEXT
);
INSERT INTO database_ops_state (id) VALUES (1);

-- ---- list indexes (0021) ------------------------------------------------------------------------------------------

CREATE INDEX identities_id_admin ON identities(id, is_admin);
CREATE INDEX identities_name_admin ON identities(name, is_admin);

-- ---- per-table change counters (0022, 0023, 0025, 0027, 0028) -----------------------------------------------------

CREATE TABLE table_versions (name TEXT PRIMARY KEY, version BIGINT NOT NULL DEFAULT 0);
INSERT INTO table_versions (name) VALUES ('services'), ('configs'), ('config_types'), ('identities'), ('api_sessions'), ('routers'),
  ('auth_policies'), ('api_session_activity'), ('router_connections'), ('identity_router_connections'), ('links');

-- ---- live fabric state (0025, 0027, 0028, 0031, 0033) -------------------------------------------------------------

CREATE TABLE router_connections (
  router_id TEXT PRIMARY KEY REFERENCES routers(id) ON DELETE CASCADE,
  owner TEXT NOT NULL,
  connection_id TEXT NOT NULL,
  connected_at TEXT NOT NULL,
  hostname TEXT NOT NULL DEFAULT '',
  supported_protocols JSONB NOT NULL DEFAULT '{}',
  version_info JSONB NOT NULL,
  sync_status TEXT NOT NULL DEFAULT 'SYNC_NEW',
  listeners JSONB NOT NULL DEFAULT '[]'
);
CREATE INDEX router_connections_owner ON router_connections(owner);

CREATE TABLE circuits (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  session_id TEXT NOT NULL,
  api_session_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  service_id TEXT NOT NULL,
  terminator_id TEXT NOT NULL,
  path JSONB NOT NULL,
  created_at TEXT NOT NULL,
  links JSONB NOT NULL DEFAULT '[]'
);
CREATE INDEX circuits_session ON circuits(session_id);
CREATE INDEX circuits_owner ON circuits(owner);

CREATE TABLE identity_router_connections (
  identity_id TEXT NOT NULL,
  router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  connected_at TEXT NOT NULL,
  PRIMARY KEY (identity_id, router_id)
);
CREATE INDEX identity_router_connections_router ON identity_router_connections(router_id);

CREATE TABLE links (
  id TEXT PRIMARY KEY,
  src_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  dst_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  protocol TEXT NOT NULL DEFAULT '',
  dial_address TEXT NOT NULL DEFAULT '',
  cost BIGINT NOT NULL DEFAULT 1,
  static_cost INTEGER NOT NULL DEFAULT 1,
  state TEXT NOT NULL DEFAULT 'Connected',
  down SMALLINT NOT NULL DEFAULT 0,
  iteration BIGINT NOT NULL DEFAULT 0,
  owner TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  -- Nanoseconds.
  src_latency BIGINT NOT NULL DEFAULT 0,
  dst_latency BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX links_src ON links(src_router_id);
CREATE INDEX links_dst ON links(dst_router_id);
CREATE INDEX links_owner ON links(owner);

CREATE TABLE link_holds (
  link_id TEXT PRIMARY KEY,
  src_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  dst_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  created_at TEXT NOT NULL
);
CREATE INDEX link_holds_src ON link_holds(src_router_id);
CREATE INDEX link_holds_dst ON link_holds(dst_router_id);

-- ---- trigger functions --------------------------------------------------------------------------------------------

-- Bumps the counter of table TG_ARGV[0] (0022): once per row inserted, updated or deleted, as SQLite's row triggers.
CREATE FUNCTION pc_bump_table_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE table_versions SET version = version + 1 WHERE name = TG_ARGV[0];
  RETURN NULL;
END
$$;

-- Appends a change-feed row of kind TG_ARGV[0] and op TG_ARGV[1] for the row's `id` (origin '': no process).
CREATE FUNCTION pc_feed_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES (TG_ARGV[0], OLD.id, TG_ARGV[1], '', pc_now());
  ELSE
    INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES (TG_ARGV[0], NEW.id, TG_ARGV[1], '', pc_now());
  END IF;
  RETURN NULL;
END
$$;

-- The same for tables keyed by `router_id` (router_connections).
CREATE FUNCTION pc_feed_router_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES (TG_ARGV[0], OLD.router_id, TG_ARGV[1], '', pc_now());
  ELSE
    INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES (TG_ARGV[0], NEW.router_id, TG_ARGV[1], '', pc_now());
  END IF;
  RETURN NULL;
END
$$;

-- An identity's per-service config overrides changed (0029): 'identityData' set for the identity. Overrides that go
-- with their identity (cascade) add no row: the identity's removal has one.
CREATE FUNCTION pc_identity_service_configs_feed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF EXISTS (SELECT 1 FROM identities WHERE id = OLD.identity_id) THEN
      INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('identityData', OLD.identity_id, 'set', '', pc_now());
    END IF;
  ELSE
    INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('identityData', NEW.identity_id, 'set', '', pc_now());
  END IF;
  RETURN NULL;
END
$$;

-- A link's cost is its static cost plus both latencies in whole milliseconds (0031).
CREATE FUNCTION pc_links_cost() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.cost := NEW.static_cost + NEW.src_latency / 1000000 + NEW.dst_latency / 1000000;
  RETURN NEW;
END
$$;

-- A link reported again comes back down while the operator's hold stands (0033).
CREATE FUNCTION pc_links_held() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.down := CASE WHEN EXISTS (SELECT 1 FROM link_holds WHERE link_id = NEW.id) THEN 1 ELSE 0 END;
  RETURN NEW;
END
$$;

-- Taking a link down or lifting the hold sets `links.down` (0033).
CREATE FUNCTION pc_link_holds_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE links SET down = 0 WHERE id = OLD.link_id;
  ELSE
    UPDATE links SET down = 1 WHERE id = NEW.link_id;
  END IF;
  RETURN NULL;
END
$$;

-- ---- table version triggers (0022, 0023, 0025, 0027, 0028) --------------------------------------------------------

CREATE TRIGGER services_version_insert AFTER INSERT ON services FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('services');
CREATE TRIGGER services_version_update AFTER UPDATE ON services FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('services');
CREATE TRIGGER services_version_delete AFTER DELETE ON services FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('services');
CREATE TRIGGER configs_version_insert AFTER INSERT ON configs FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('configs');
CREATE TRIGGER configs_version_update AFTER UPDATE ON configs FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('configs');
CREATE TRIGGER configs_version_delete AFTER DELETE ON configs FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('configs');
CREATE TRIGGER config_types_version_insert AFTER INSERT ON config_types FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('config_types');
CREATE TRIGGER config_types_version_update AFTER UPDATE ON config_types FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('config_types');
CREATE TRIGGER config_types_version_delete AFTER DELETE ON config_types FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('config_types');
CREATE TRIGGER identities_version_insert AFTER INSERT ON identities FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identities');
CREATE TRIGGER identities_version_update AFTER UPDATE ON identities FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identities');
CREATE TRIGGER identities_version_delete AFTER DELETE ON identities FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identities');
-- Not inserts, and not the activity time (written every few seconds; it has its own counter below).
CREATE TRIGGER api_sessions_version_update AFTER UPDATE OF token_hash, identity_id, authenticator_id, ip_address, config_types,
  is_mfa_required, is_mfa_complete, is_cert_extendable, is_cert_extend_requested, is_cert_key_roll_requested, improper_client_cert_chain,
  mfa_passed_at, created_at, updated_at, tags, is_system ON api_sessions FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('api_sessions');
CREATE TRIGGER api_sessions_version_delete AFTER DELETE ON api_sessions FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('api_sessions');
CREATE TRIGGER routers_version_insert AFTER INSERT ON routers FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('routers');
CREATE TRIGGER routers_version_update AFTER UPDATE ON routers FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('routers');
CREATE TRIGGER routers_version_delete AFTER DELETE ON routers FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('routers');
CREATE TRIGGER auth_policies_version_insert AFTER INSERT ON auth_policies FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('auth_policies');
CREATE TRIGGER auth_policies_version_update AFTER UPDATE ON auth_policies FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('auth_policies');
CREATE TRIGGER auth_policies_version_delete AFTER DELETE ON auth_policies FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('auth_policies');
CREATE TRIGGER api_sessions_activity_version_update AFTER UPDATE OF last_activity_at ON api_sessions
  FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('api_session_activity');
CREATE TRIGGER router_connections_version_insert AFTER INSERT ON router_connections FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('router_connections');
CREATE TRIGGER router_connections_version_update AFTER UPDATE ON router_connections FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('router_connections');
CREATE TRIGGER router_connections_version_delete AFTER DELETE ON router_connections FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('router_connections');
CREATE TRIGGER identity_router_connections_version_insert AFTER INSERT ON identity_router_connections
  FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identity_router_connections');
CREATE TRIGGER identity_router_connections_version_delete AFTER DELETE ON identity_router_connections
  FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identity_router_connections');
CREATE TRIGGER links_version_insert AFTER INSERT ON links FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('links');
CREATE TRIGGER links_version_update AFTER UPDATE ON links FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('links');
CREATE TRIGGER links_version_delete AFTER DELETE ON links FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('links');

-- ---- change-feed triggers (0026, 0029, 0030) ----------------------------------------------------------------------

CREATE TRIGGER api_sessions_feed_insert AFTER INSERT ON api_sessions FOR EACH ROW EXECUTE FUNCTION pc_feed_id('apiSession', 'set');
CREATE TRIGGER api_sessions_feed_delete AFTER DELETE ON api_sessions FOR EACH ROW EXECUTE FUNCTION pc_feed_id('apiSession', 'remove');
CREATE TRIGGER sessions_feed_delete AFTER DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION pc_feed_id('session', 'remove');

CREATE TRIGGER config_types_model_insert AFTER INSERT ON config_types FOR EACH ROW EXECUTE FUNCTION pc_feed_id('configType', 'set');
CREATE TRIGGER config_types_model_update AFTER UPDATE OF name ON config_types FOR EACH ROW
  WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION pc_feed_id('configType', 'set');
CREATE TRIGGER config_types_model_delete AFTER DELETE ON config_types FOR EACH ROW EXECUTE FUNCTION pc_feed_id('configType', 'remove');

CREATE TRIGGER configs_model_insert AFTER INSERT ON configs FOR EACH ROW EXECUTE FUNCTION pc_feed_id('config', 'set');
CREATE TRIGGER configs_model_update AFTER UPDATE OF name, config_type_id, data ON configs FOR EACH ROW
  WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.config_type_id IS DISTINCT FROM NEW.config_type_id OR OLD.data IS DISTINCT FROM NEW.data)
  EXECUTE FUNCTION pc_feed_id('config', 'set');
CREATE TRIGGER configs_model_delete AFTER DELETE ON configs FOR EACH ROW EXECUTE FUNCTION pc_feed_id('config', 'remove');

CREATE TRIGGER identities_model_update AFTER UPDATE OF name, default_hosting_cost, default_hosting_precedence, service_hosting_costs,
  service_hosting_precedences, app_data, disabled_at, disabled_until ON identities FOR EACH ROW
  WHEN (OLD.name IS DISTINCT FROM NEW.name
    OR OLD.default_hosting_cost IS DISTINCT FROM NEW.default_hosting_cost
    OR OLD.default_hosting_precedence IS DISTINCT FROM NEW.default_hosting_precedence
    OR OLD.service_hosting_costs IS DISTINCT FROM NEW.service_hosting_costs
    OR OLD.service_hosting_precedences IS DISTINCT FROM NEW.service_hosting_precedences
    OR OLD.app_data IS DISTINCT FROM NEW.app_data
    OR OLD.disabled_at IS DISTINCT FROM NEW.disabled_at
    OR OLD.disabled_until IS DISTINCT FROM NEW.disabled_until)
  EXECUTE FUNCTION pc_feed_id('identityData', 'set');
CREATE TRIGGER identity_service_configs_model_insert AFTER INSERT ON identity_service_configs FOR EACH ROW
  EXECUTE FUNCTION pc_identity_service_configs_feed();
CREATE TRIGGER identity_service_configs_model_update AFTER UPDATE ON identity_service_configs FOR EACH ROW
  EXECUTE FUNCTION pc_identity_service_configs_feed();
CREATE TRIGGER identity_service_configs_model_delete AFTER DELETE ON identity_service_configs FOR EACH ROW
  EXECUTE FUNCTION pc_identity_service_configs_feed();

CREATE TRIGGER services_model_update AFTER UPDATE OF name, encryption_required, configs ON services FOR EACH ROW
  WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.encryption_required IS DISTINCT FROM NEW.encryption_required OR OLD.configs IS DISTINCT FROM NEW.configs)
  EXECUTE FUNCTION pc_feed_id('serviceData', 'set');

CREATE TRIGGER posture_checks_model_update AFTER UPDATE OF name, type_id, details ON posture_checks FOR EACH ROW
  WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.type_id IS DISTINCT FROM NEW.type_id OR OLD.details IS DISTINCT FROM NEW.details)
  EXECUTE FUNCTION pc_feed_id('postureCheckData', 'set');

CREATE TRIGGER cas_model_insert AFTER INSERT ON cas FOR EACH ROW EXECUTE FUNCTION pc_feed_id('ca', 'set');
CREATE TRIGGER cas_model_update AFTER UPDATE OF cert_pem ON cas FOR EACH ROW
  WHEN (OLD.cert_pem IS DISTINCT FROM NEW.cert_pem) EXECUTE FUNCTION pc_feed_id('ca', 'set');
CREATE TRIGGER cas_model_delete AFTER DELETE ON cas FOR EACH ROW EXECUTE FUNCTION pc_feed_id('ca', 'remove');

CREATE TRIGGER router_connections_feed_insert AFTER INSERT ON router_connections FOR EACH ROW
  EXECUTE FUNCTION pc_feed_router_id('routerConnection', 'set');
CREATE TRIGGER router_connections_feed_delete AFTER DELETE ON router_connections FOR EACH ROW
  EXECUTE FUNCTION pc_feed_router_id('routerConnection', 'remove');
CREATE TRIGGER links_feed_insert AFTER INSERT ON links FOR EACH ROW EXECUTE FUNCTION pc_feed_id('link', 'set');
CREATE TRIGGER links_feed_delete AFTER DELETE ON links FOR EACH ROW EXECUTE FUNCTION pc_feed_id('link', 'remove');
CREATE TRIGGER circuits_feed_insert AFTER INSERT ON circuits FOR EACH ROW EXECUTE FUNCTION pc_feed_id('circuit', 'set');
CREATE TRIGGER circuits_feed_delete AFTER DELETE ON circuits FOR EACH ROW EXECUTE FUNCTION pc_feed_id('circuit', 'remove');

-- ---- link cost and holds (0031, 0033) -----------------------------------------------------------------------------

-- BEFORE triggers (fired in name order: cost, then down). An upsert that updates an existing link keeps its cost and
-- down flag unless it assigns static_cost or a latency, as on SQLite.
CREATE TRIGGER links_cost_insert BEFORE INSERT ON links FOR EACH ROW EXECUTE FUNCTION pc_links_cost();
CREATE TRIGGER links_cost_update BEFORE UPDATE OF static_cost, src_latency, dst_latency ON links FOR EACH ROW EXECUTE FUNCTION pc_links_cost();
CREATE TRIGGER links_held_insert BEFORE INSERT ON links FOR EACH ROW EXECUTE FUNCTION pc_links_held();
CREATE TRIGGER link_holds_insert AFTER INSERT ON link_holds FOR EACH ROW EXECUTE FUNCTION pc_link_holds_apply();
CREATE TRIGGER link_holds_delete AFTER DELETE ON link_holds FOR EACH ROW EXECUTE FUNCTION pc_link_holds_apply();
