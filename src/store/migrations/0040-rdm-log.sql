-- The router data model's change sets as the network's leader built them (src/fabric/data-model/change-set-log.ts),
-- so that every controller on one store sends routers the same sets under the same indexes, and a router that moves
-- its subscription to another controller gets the sets it misses instead of a full state. `body` is the base64 of
-- the set's encoded changes; a row without one marks a restart of the chain (a new leader that could not know what
-- routers were told since `prev_idx`). Written only when controllers share a PostgreSQL store; the table exists
-- here so both schemas stay one.
CREATE TABLE rdm_change_sets (
  idx INTEGER PRIMARY KEY,
  prev_idx INTEGER NOT NULL UNIQUE,
  first_seq INTEGER NOT NULL,
  body TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX rdm_change_sets_created ON rdm_change_sets(created_at);
