-- Router connections per controller (the SQLite migration of the same number says why). Made again rather than
-- altered, so its columns keep the order SQLite's have; its rows are runtime rows, none is kept.
DROP TABLE router_connections;
CREATE TABLE router_connections (
  router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  controller_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  connection_id TEXT NOT NULL,
  connected_at TEXT NOT NULL,
  hostname TEXT NOT NULL DEFAULT '',
  supported_protocols JSONB NOT NULL DEFAULT '{}',
  version_info JSONB NOT NULL,
  sync_status TEXT NOT NULL DEFAULT 'SYNC_NEW',
  listeners JSONB NOT NULL DEFAULT '[]',
  PRIMARY KEY (router_id, controller_id)
);
CREATE INDEX router_connections_owner ON router_connections(owner);
CREATE TRIGGER router_connections_version_insert AFTER INSERT ON router_connections FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('router_connections');
CREATE TRIGGER router_connections_version_update AFTER UPDATE ON router_connections FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('router_connections');
CREATE TRIGGER router_connections_version_delete AFTER DELETE ON router_connections FOR EACH ROW EXECUTE FUNCTION pc_bump_table_version('router_connections');
CREATE TRIGGER router_connections_feed_insert AFTER INSERT ON router_connections FOR EACH ROW
  EXECUTE FUNCTION pc_feed_router_id('routerConnection', 'set');
CREATE TRIGGER router_connections_feed_delete AFTER DELETE ON router_connections FOR EACH ROW
  EXECUTE FUNCTION pc_feed_router_id('routerConnection', 'remove');
UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections';
