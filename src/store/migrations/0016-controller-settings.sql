-- Controller settings: one `global` record (controller_id NULL, created here) and at most one overriding
-- record per controller, whose id is the controller's id. `oidc` holds {redirectUris?, postLogoutUris?}.
CREATE TABLE controller_settings (
  id TEXT PRIMARY KEY,
  controller_id TEXT UNIQUE REFERENCES controllers(id) ON DELETE CASCADE,
  oidc TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '{}',
  is_system INTEGER NOT NULL DEFAULT 0,
  CHECK ((id = 'global' AND controller_id IS NULL) OR id = controller_id)
);

INSERT INTO controller_settings (id, controller_id, oidc, created_at, updated_at, is_system)
VALUES ('global', NULL, NULL, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 1);
