-- A notice on its own channel at each commit that appended model rows to the change feed (every kind but the runtime
-- rows of circuits and router connections, as the partial index change_feed_model) or a set to the shared change-set
-- log. PostgreSQL folds the equal notices of one transaction into one and delivers it at the commit, never at a
-- rollback. Each controller listens and runs its routers' poll at once (src/fabric/fabric.ts): a change reaches routers
-- within milliseconds, and the commits of circuits and router connections wake nobody.
CREATE FUNCTION pc_feed_notice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('portcullis_feed', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER change_feed_notice AFTER INSERT ON change_feed FOR EACH ROW
  WHEN (NEW.kind NOT IN ('circuit', 'routerConnection')) EXECUTE FUNCTION pc_feed_notice();
CREATE TRIGGER rdm_change_sets_notice AFTER INSERT ON rdm_change_sets FOR EACH STATEMENT EXECUTE FUNCTION pc_feed_notice();
