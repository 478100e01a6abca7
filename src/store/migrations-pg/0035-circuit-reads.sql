-- Change counters for service sessions and terminators, and the index of model feed rows (the SQLite migration of
-- the same number says why).
INSERT INTO table_versions (name) VALUES ('sessions'), ('terminators');
CREATE TRIGGER sessions_version_insert AFTER INSERT ON sessions FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('sessions');
CREATE TRIGGER sessions_version_update AFTER UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('sessions');
CREATE TRIGGER sessions_version_delete AFTER DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('sessions');
CREATE TRIGGER terminators_version_insert AFTER INSERT ON terminators FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('terminators');
CREATE TRIGGER terminators_version_update AFTER UPDATE ON terminators FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('terminators');
CREATE TRIGGER terminators_version_delete AFTER DELETE ON terminators FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('terminators');
-- Readers of the change feed read model rows only (src/cluster/change-feed.ts): the rows of runtime writes
-- (circuits, router connections) may commit out of seq order beside them and are left to whoever lists events.
CREATE INDEX change_feed_model ON change_feed(seq) WHERE kind NOT IN ('circuit', 'routerConnection');
