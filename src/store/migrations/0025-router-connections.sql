-- Routers connected to a control channel now: one row per router, written by the process that holds the
-- connection (`owner` is its change-feed origin) and removed when it ends. Every row is stale after a restart,
-- so each controller start empties the table; the primary removes the rows of a worker that died.
CREATE TABLE router_connections (
  router_id TEXT PRIMARY KEY REFERENCES routers(id) ON DELETE CASCADE,
  owner TEXT NOT NULL,
  connection_id TEXT NOT NULL,
  connected_at TEXT NOT NULL,
  hostname TEXT NOT NULL DEFAULT '',
  supported_protocols TEXT NOT NULL DEFAULT '{}',
  version_info TEXT NOT NULL,
  sync_status TEXT NOT NULL DEFAULT 'SYNC_NEW',
  -- The router's link listeners as it announced them (JSON list of {address, protocol, costTags, groups}).
  listeners TEXT NOT NULL DEFAULT '[]'
) WITHOUT ROWID;
CREATE INDEX router_connections_owner ON router_connections(owner);
INSERT INTO table_versions (name) VALUES ('router_connections');
CREATE TRIGGER router_connections_version_insert AFTER INSERT ON router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections'; END;
CREATE TRIGGER router_connections_version_update AFTER UPDATE ON router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections'; END;
CREATE TRIGGER router_connections_version_delete AFTER DELETE ON router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'router_connections'; END;
