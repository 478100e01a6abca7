-- What each end of a link measures of it (nanoseconds, the mean of the latency the routers report in their
-- metrics, queue time included). A link's cost is its static cost plus both latencies in whole milliseconds;
-- a link starts at the initial latency on both ends until the routers have measured it.
ALTER TABLE links ADD COLUMN src_latency INTEGER NOT NULL DEFAULT 0;
ALTER TABLE links ADD COLUMN dst_latency INTEGER NOT NULL DEFAULT 0;
