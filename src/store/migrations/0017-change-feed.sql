-- The change feed: one row per write that changes state a process keeps in memory (today the access index),
-- written in the same transaction as that write. Rows say what to reload (kind, id, op), never the data, so
-- every worker process (and, later, every controller instance on a shared store) re-reads the record and
-- applies it to its own copy. `seq` only grows (AUTOINCREMENT: never reused, even after trimming);
-- `origin` names the writing process so it can skip its own rows.
CREATE TABLE change_feed (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  op TEXT NOT NULL CHECK (op IN ('set', 'remove', 'reload')),
  origin TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX change_feed_created ON change_feed(created_at);

-- Trimming deletes old rows and records the highest seq deleted: a reader whose position is below it has
-- missed rows and rebuilds its state from the store instead.
CREATE TABLE change_feed_trim (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  trimmed_through INTEGER NOT NULL
);
INSERT INTO change_feed_trim (id, trimmed_through) VALUES (1, 0);

-- Database operations shared by every worker: the one integrity run at a time (its owner process, state
-- and results) and the time of the last snapshot (at most one per minute).
CREATE TABLE database_ops_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  run_owner TEXT,
  in_progress INTEGER NOT NULL DEFAULT 0,
  fixing_errors INTEGER NOT NULL DEFAULT 0,
  too_many_errors INTEGER NOT NULL DEFAULT 0,
  start_time TEXT,
  end_time TEXT,
  error TEXT,
  results TEXT,
  last_snapshot_at TEXT
);
INSERT INTO database_ops_state (id) VALUES (1);
