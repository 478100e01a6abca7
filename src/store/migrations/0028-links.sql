-- Links between routers as the routers that dialed them report them: written by the process holding the
-- dialing router, read by every process (path selection, the fabric API). Like router_connections, every row
-- is stale after a restart: each controller start empties the table, and the primary removes those of a
-- worker that died.
CREATE TABLE links (
  id TEXT PRIMARY KEY,
  src_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  dst_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  protocol TEXT NOT NULL DEFAULT '',
  dial_address TEXT NOT NULL DEFAULT '',
  cost INTEGER NOT NULL DEFAULT 1,
  static_cost INTEGER NOT NULL DEFAULT 1,
  state TEXT NOT NULL DEFAULT 'Connected',
  down INTEGER NOT NULL DEFAULT 0,
  iteration INTEGER NOT NULL DEFAULT 0,
  owner TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX links_src ON links(src_router_id);
CREATE INDEX links_dst ON links(dst_router_id);
CREATE INDEX links_owner ON links(owner);
INSERT INTO table_versions (name) VALUES ('links');
CREATE TRIGGER links_version_insert AFTER INSERT ON links BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'links'; END;
CREATE TRIGGER links_version_update AFTER UPDATE ON links BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'links'; END;
CREATE TRIGGER links_version_delete AFTER DELETE ON links BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'links'; END;

-- The links a circuit's path crosses (JSON list, in path order).
ALTER TABLE circuits ADD COLUMN links TEXT NOT NULL DEFAULT '[]';
