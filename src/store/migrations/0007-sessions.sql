-- Sessions remember the service policies that granted them when they were created (upstream shows
-- them as `servicePolicies` on the session read model): a JSON array of policy ids.
ALTER TABLE sessions ADD COLUMN service_policies TEXT NOT NULL DEFAULT '[]';
