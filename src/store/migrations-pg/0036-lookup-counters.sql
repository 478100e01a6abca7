-- Change counters for the tables a client's hot reads look into per identity (the SQLite migration of the same
-- number says why).
INSERT INTO table_versions (name) VALUES ('identity_service_configs'), ('authenticators'), ('enrollments'), ('cas'), ('mfas');
CREATE TRIGGER identity_service_configs_version_insert AFTER INSERT ON identity_service_configs FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identity_service_configs');
CREATE TRIGGER identity_service_configs_version_update AFTER UPDATE ON identity_service_configs FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identity_service_configs');
CREATE TRIGGER identity_service_configs_version_delete AFTER DELETE ON identity_service_configs FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('identity_service_configs');
CREATE TRIGGER authenticators_version_insert AFTER INSERT ON authenticators FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('authenticators');
CREATE TRIGGER authenticators_version_update AFTER UPDATE ON authenticators FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('authenticators');
CREATE TRIGGER authenticators_version_delete AFTER DELETE ON authenticators FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('authenticators');
CREATE TRIGGER enrollments_version_insert AFTER INSERT ON enrollments FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('enrollments');
CREATE TRIGGER enrollments_version_update AFTER UPDATE ON enrollments FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('enrollments');
CREATE TRIGGER enrollments_version_delete AFTER DELETE ON enrollments FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('enrollments');
CREATE TRIGGER cas_version_insert AFTER INSERT ON cas FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('cas');
CREATE TRIGGER cas_version_update AFTER UPDATE ON cas FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('cas');
CREATE TRIGGER cas_version_delete AFTER DELETE ON cas FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('cas');
CREATE TRIGGER mfas_version_insert AFTER INSERT ON mfas FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('mfas');
CREATE TRIGGER mfas_version_update AFTER UPDATE ON mfas FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('mfas');
CREATE TRIGGER mfas_version_delete AFTER DELETE ON mfas FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('mfas');
