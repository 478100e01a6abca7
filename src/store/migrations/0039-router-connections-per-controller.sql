-- Router connections per controller: with several controllers on one store a router keeps one control channel to
-- each of them, so a row is keyed by the router and the controller holding its channel (`controller_id`, the
-- controller's id; `owner` stays the process). A newer connection of a router to the same controller replaces the
-- row; a connection to another controller is a row of its own. SQLite cannot change a primary key: the table is
-- made again. Its rows are runtime rows (every start drops them), so none is kept.
DROP TABLE router_connections;
CREATE TABLE router_connections (
  router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  controller_id TEXT NOT NULL,
  owner TEXT NOT NULL,
  connection_id TEXT NOT NULL,
  connected_at TEXT NOT NULL,
  hostname TEXT NOT NULL DEFAULT '',
  supported_protocols TEXT NOT NULL DEFAULT '{}',
  version_info TEXT NOT NULL,
  sync_status TEXT NOT NULL DEFAULT 'SYNC_NEW',
  listeners TEXT NOT NULL DEFAULT '[]',
  PRIMARY KEY (router_id, controller_id)
) WITHOUT ROWID;
CREATE INDEX router_connections_owner ON router_connections(owner);
-- The dropped table's triggers went with it: the change counter (0025) and the network events (0030), one event per
-- connection to each controller.
CREATE TRIGGER router_connections_version_insert AFTER INSERT ON router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections'; END;
CREATE TRIGGER router_connections_version_update AFTER UPDATE ON router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections'; END;
CREATE TRIGGER router_connections_version_delete AFTER DELETE ON router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections'; END;
CREATE TRIGGER router_connections_feed_insert AFTER INSERT ON router_connections BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('routerConnection', NEW.router_id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER router_connections_feed_delete AFTER DELETE ON router_connections BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('routerConnection', OLD.router_id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
-- The version moves: the table changed under every cache built on it.
UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections';
