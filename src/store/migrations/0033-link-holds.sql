-- Links an operator took down (`PATCH /fabric/v1/links/{id}` with `down: true`). A link row lives only while its
-- routers report it: it goes with a router's connection, a link fault, a full refresh that no longer lists it,
-- and at controller start. The operator's decision outlives the row: a link reported again under the same id (a
-- router that reconnects re-announces its links, a link re-dialed after a fault keeps its id with a new
-- iteration) comes back down, until the operator lifts it (`down: false`). `links.down` is kept from this table
-- by the triggers below, so that no writer of links (reports, metrics, patches) can lose it.
CREATE TABLE link_holds (
  link_id TEXT PRIMARY KEY,
  -- The link's routers when it was taken down: a hold goes when either router is deleted.
  src_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  dst_router_id TEXT NOT NULL REFERENCES routers(id) ON DELETE CASCADE,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX link_holds_src ON link_holds(src_router_id);
CREATE INDEX link_holds_dst ON link_holds(dst_router_id);
CREATE TRIGGER links_held_insert AFTER INSERT ON links BEGIN
  UPDATE links SET down = EXISTS (SELECT 1 FROM link_holds WHERE link_id = NEW.id) WHERE id = NEW.id;
END;
CREATE TRIGGER link_holds_insert AFTER INSERT ON link_holds BEGIN
  UPDATE links SET down = 1 WHERE id = NEW.link_id;
END;
CREATE TRIGGER link_holds_delete AFTER DELETE ON link_holds BEGIN
  UPDATE links SET down = 0 WHERE id = OLD.link_id;
END;
