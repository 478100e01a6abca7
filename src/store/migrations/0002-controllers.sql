-- Controllers of the network: this instance registers itself at every start (several instances on a
-- shared database will each have a row).
CREATE TABLE controllers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  cert_pem TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  ctrl_address TEXT,
  api_addresses TEXT NOT NULL DEFAULT '{}',
  is_online INTEGER NOT NULL DEFAULT 0,
  last_joined_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0
);
