-- The network's own events, in one order every process sees: a router connecting and disconnecting, a link
-- coming up and going, a circuit created and ended, each a change-feed row (origin '' like the other store
-- triggers) beside the rows of the records they change.
CREATE TRIGGER router_connections_feed_insert AFTER INSERT ON router_connections BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('routerConnection', NEW.router_id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER router_connections_feed_delete AFTER DELETE ON router_connections BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('routerConnection', OLD.router_id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER links_feed_insert AFTER INSERT ON links BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('link', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER links_feed_delete AFTER DELETE ON links BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('link', OLD.id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER circuits_feed_insert AFTER INSERT ON circuits BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('circuit', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER circuits_feed_delete AFTER DELETE ON circuits BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('circuit', OLD.id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
