-- Counters for the per-process caller cache (src/auth/caller-cache.ts), in the style of 0022: auth policies
-- (their secondary settings decide on every request whether a session is partial), and the stored activity
-- time of API sessions, which 0022's api_sessions counter leaves out. The current API session read model
-- shows that time, so a cached session row is only exact while neither counter moved.
INSERT INTO table_versions (name) VALUES ('auth_policies'), ('api_session_activity');
CREATE TRIGGER auth_policies_version_insert AFTER INSERT ON auth_policies BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'auth_policies'; END;
CREATE TRIGGER auth_policies_version_update AFTER UPDATE ON auth_policies BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'auth_policies'; END;
CREATE TRIGGER auth_policies_version_delete AFTER DELETE ON auth_policies BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'auth_policies'; END;
CREATE TRIGGER api_sessions_activity_version_update AFTER UPDATE OF last_activity_at ON api_sessions BEGIN UPDATE table_versions SET version = version + 1 WHERE name = 'api_session_activity'; END;
