-- Routers verify SDK connections against the API sessions the controller pushes to them, token included, so
-- the token is kept sealed (AES-256-GCM under a key in the PKI directory), never in clear; the hash stays the
-- lookup key. Sessions created before this migration have none and are never pushed.
ALTER TABLE api_sessions ADD COLUMN sealed_token TEXT;

-- API sessions come and go and service sessions end in many places (login, logout, admin delete, idle expiry,
-- identity removal and disabling, cascades); each such change appends a change-feed row from the store
-- itself, so the processes holding router connections tell their routers, whoever made the change. Origin ''
-- is no process: every reader sees the row (the access index ignores these kinds).
CREATE TRIGGER api_sessions_feed_insert AFTER INSERT ON api_sessions BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('apiSession', NEW.id, 'set', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER api_sessions_feed_delete AFTER DELETE ON api_sessions BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('apiSession', OLD.id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER sessions_feed_delete AFTER DELETE ON sessions BEGIN
  INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('session', OLD.id, 'remove', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;

-- What a hosting SDK told its router when it bound (its public key for end-to-end encryption...): handed to
-- every dialer of the terminator. JSON object of peer-data key → base64 value.
ALTER TABLE terminators ADD COLUMN peer_data TEXT NOT NULL DEFAULT '{}';
