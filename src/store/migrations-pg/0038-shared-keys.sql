-- Keys every controller of a network shares (the SQLite migration of the same number says why).
CREATE TABLE shared_keys (
  name TEXT PRIMARY KEY,
  wrapped TEXT NOT NULL,
  created_at TEXT NOT NULL
);
