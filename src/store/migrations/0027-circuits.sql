-- Circuits routed now, and which identities have an SDK connected to which router: written by the process
-- holding the routers' control channels, read by every process (route paths, identity connection state).
-- Like router_connections, every row is stale after a restart: each controller start empties both tables,
-- and the primary removes those of a worker that died.
CREATE TABLE circuits (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  session_id TEXT NOT NULL,
  api_session_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  service_id TEXT NOT NULL,
  terminator_id TEXT NOT NULL,
  -- Router ids from the dialer's to the host's, as a JSON list.
  path TEXT NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX circuits_session ON circuits(session_id);
CREATE INDEX circuits_owner ON circuits(owner);

CREATE TABLE identity_router_connections (
  identity_id TEXT NOT NULL,
  router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  connected_at TEXT NOT NULL,
  PRIMARY KEY (identity_id, router_id)
) WITHOUT ROWID;
CREATE INDEX identity_router_connections_router ON identity_router_connections(router_id);
INSERT INTO table_versions (name) VALUES ('identity_router_connections');
CREATE TRIGGER identity_router_connections_version_insert AFTER INSERT ON identity_router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identity_router_connections'; END;
CREATE TRIGGER identity_router_connections_version_delete AFTER DELETE ON identity_router_connections BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'identity_router_connections'; END;
