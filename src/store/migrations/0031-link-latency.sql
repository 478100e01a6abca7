-- What each end of a link measures of it (nanoseconds, the mean of the latency the routers report in their
-- metrics, queue time included); a link starts at the initial latency on both ends until the routers have
-- measured it. A link's cost is its static cost plus both latencies in whole milliseconds, kept here so that
-- every writer (link reports, metrics, an operator's patch) gets it the same way.
ALTER TABLE links ADD COLUMN src_latency INTEGER NOT NULL DEFAULT 0;
ALTER TABLE links ADD COLUMN dst_latency INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER links_cost_insert AFTER INSERT ON links BEGIN
  UPDATE links SET cost = NEW.static_cost + NEW.src_latency / 1000000 + NEW.dst_latency / 1000000 WHERE id = NEW.id;
END;
CREATE TRIGGER links_cost_update AFTER UPDATE OF static_cost, src_latency, dst_latency ON links BEGIN
  UPDATE links SET cost = NEW.static_cost + NEW.src_latency / 1000000 + NEW.dst_latency / 1000000 WHERE id = NEW.id;
END;
