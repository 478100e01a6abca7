-- Keys every controller of a network shares, wrapped under the operator's cluster secret (src/pki/key-wrap.ts,
-- src/cluster/network.ts). A controller on the embedded store never writes here; the table exists so both schemas
-- stay one.
CREATE TABLE shared_keys (
  name TEXT PRIMARY KEY,
  wrapped TEXT NOT NULL,
  created_at TEXT NOT NULL
);
