-- The router data model's change sets as the leader built them (the SQLite migration of the same number says why).
CREATE TABLE rdm_change_sets (
  idx BIGINT PRIMARY KEY,
  prev_idx BIGINT NOT NULL UNIQUE,
  first_seq BIGINT NOT NULL,
  body TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX rdm_change_sets_created ON rdm_change_sets(created_at);
