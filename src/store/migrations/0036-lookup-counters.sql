-- Change counters for the tables a client's hot reads look into per identity: config overrides (the service list
-- with configs), authenticators, enrollments, CAs and MFA (the caller's own identity). On a store across the network
-- (PostgreSQL) those reads are kept in memory while the counters stand (src/store/versioned-lookup.ts).
INSERT INTO table_versions (name) VALUES ('identity_service_configs'), ('authenticators'), ('enrollments'), ('cas'), ('mfas');
CREATE TRIGGER identity_service_configs_version_insert AFTER INSERT ON identity_service_configs BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identity_service_configs'; END;
CREATE TRIGGER identity_service_configs_version_update AFTER UPDATE ON identity_service_configs BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identity_service_configs'; END;
CREATE TRIGGER identity_service_configs_version_delete AFTER DELETE ON identity_service_configs BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identity_service_configs'; END;
CREATE TRIGGER authenticators_version_insert AFTER INSERT ON authenticators BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'authenticators'; END;
CREATE TRIGGER authenticators_version_update AFTER UPDATE ON authenticators BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'authenticators'; END;
CREATE TRIGGER authenticators_version_delete AFTER DELETE ON authenticators BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'authenticators'; END;
CREATE TRIGGER enrollments_version_insert AFTER INSERT ON enrollments BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'enrollments'; END;
CREATE TRIGGER enrollments_version_update AFTER UPDATE ON enrollments BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'enrollments'; END;
CREATE TRIGGER enrollments_version_delete AFTER DELETE ON enrollments BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'enrollments'; END;
CREATE TRIGGER cas_version_insert AFTER INSERT ON cas BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'cas'; END;
CREATE TRIGGER cas_version_update AFTER UPDATE ON cas BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'cas'; END;
CREATE TRIGGER cas_version_delete AFTER DELETE ON cas BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'cas'; END;
CREATE TRIGGER mfas_version_insert AFTER INSERT ON mfas BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'mfas'; END;
CREATE TRIGGER mfas_version_update AFTER UPDATE ON mfas BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'mfas'; END;
CREATE TRIGGER mfas_version_delete AFTER DELETE ON mfas BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'mfas'; END;
