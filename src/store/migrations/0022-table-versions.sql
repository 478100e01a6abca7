-- Per-table change counters for per-process read caches: every committed insert, update or delete of a
-- listed table bumps its row in the same transaction, so a cache keyed by the counter is exact whichever
-- process (or tool) wrote. api_sessions counts only changes a cached session lookup depends on (not the
-- activity time, which is written every few seconds), and not inserts (a new session changes no other).
CREATE TABLE table_versions (name TEXT PRIMARY KEY, version INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
INSERT INTO table_versions (name) VALUES ('services'), ('configs'), ('config_types'), ('identities'), ('api_sessions'), ('routers');
CREATE TRIGGER services_version_insert AFTER INSERT ON services BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'services'; END;
CREATE TRIGGER services_version_update AFTER UPDATE ON services BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'services'; END;
CREATE TRIGGER services_version_delete AFTER DELETE ON services BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'services'; END;
CREATE TRIGGER configs_version_insert AFTER INSERT ON configs BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'configs'; END;
CREATE TRIGGER configs_version_update AFTER UPDATE ON configs BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'configs'; END;
CREATE TRIGGER configs_version_delete AFTER DELETE ON configs BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'configs'; END;
CREATE TRIGGER config_types_version_insert AFTER INSERT ON config_types BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'config_types'; END;
CREATE TRIGGER config_types_version_update AFTER UPDATE ON config_types BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'config_types'; END;
CREATE TRIGGER config_types_version_delete AFTER DELETE ON config_types BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'config_types'; END;
CREATE TRIGGER identities_version_insert AFTER INSERT ON identities BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identities'; END;
CREATE TRIGGER identities_version_update AFTER UPDATE ON identities BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identities'; END;
CREATE TRIGGER identities_version_delete AFTER DELETE ON identities BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identities'; END;
CREATE TRIGGER api_sessions_version_update AFTER UPDATE OF token_hash, identity_id, authenticator_id, ip_address, config_types, is_mfa_required, is_mfa_complete, is_cert_extendable, is_cert_extend_requested, is_cert_key_roll_requested, improper_client_cert_chain, mfa_passed_at, created_at, updated_at, tags, is_system ON api_sessions BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'api_sessions'; END;
CREATE TRIGGER api_sessions_version_delete AFTER DELETE ON api_sessions BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'api_sessions'; END;
CREATE TRIGGER routers_version_insert AFTER INSERT ON routers BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'routers'; END;
CREATE TRIGGER routers_version_update AFTER UPDATE ON routers BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'routers'; END;
CREATE TRIGGER routers_version_delete AFTER DELETE ON routers BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'routers'; END;
