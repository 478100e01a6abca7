-- Indexes for management lists over many identities: walking the rows a deep OFFSET skips reads only index
-- entries when one index holds the sort column and the filtered column (default id order, and name order,
-- each with `isAdmin`), and counting under an `isAdmin` filter scans an index instead of the rows.
CREATE INDEX identities_id_admin ON identities(id, is_admin);
CREATE INDEX identities_name_admin ON identities(name, is_admin);
