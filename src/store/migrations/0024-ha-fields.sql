-- Fields upstream keeps for controller clusters, filterable there: the controller a terminator was created
-- through, and whether a controller is its cluster's preferred leader (none is, without cluster settings).
ALTER TABLE terminators ADD COLUMN source_ctrl TEXT;
ALTER TABLE controllers ADD COLUMN is_preferred_leader INTEGER NOT NULL DEFAULT 0;
