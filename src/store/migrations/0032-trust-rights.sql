-- The rights of whoever last set what an external JWT signer or a third-party CA authenticates (its keys, its
-- claims, verification): it logs in only identities whose rights these cover (src/auth/rights.ts). Records
-- written before rights were kept get none: an admin re-saves those that must log in identities with rights.
ALTER TABLE external_jwt_signers ADD COLUMN trust_rights TEXT NOT NULL DEFAULT '{"isAdmin":false,"permissions":[]}';
ALTER TABLE cas ADD COLUMN trust_rights TEXT NOT NULL DEFAULT '{"isAdmin":false,"permissions":[]}';
