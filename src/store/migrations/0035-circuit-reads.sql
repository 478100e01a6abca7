-- Change counters for service sessions and terminators: a router's circuit request looks both up, and on a store
-- across the network (PostgreSQL) each lookup would be a round trip; with counters they are kept in memory and read
-- again only after a commit changed them.
INSERT INTO table_versions (name) VALUES ('sessions'), ('terminators');
CREATE TRIGGER sessions_version_insert AFTER INSERT ON sessions BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'sessions'; END;
CREATE TRIGGER sessions_version_update AFTER UPDATE ON sessions BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'sessions'; END;
CREATE TRIGGER sessions_version_delete AFTER DELETE ON sessions BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'sessions'; END;
CREATE TRIGGER terminators_version_insert AFTER INSERT ON terminators BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'terminators'; END;
CREATE TRIGGER terminators_version_update AFTER UPDATE ON terminators BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'terminators'; END;
CREATE TRIGGER terminators_version_delete AFTER DELETE ON terminators BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'terminators'; END;
-- Readers of the change feed read model rows only (src/cluster/change-feed.ts): the rows of runtime writes
-- (circuits, router connections) may commit out of seq order beside them and are left to whoever lists events.
CREATE INDEX change_feed_model ON change_feed(seq) WHERE kind NOT IN ('circuit', 'routerConnection');
