-- Facts of stored certificates that filters read (see migrations/0034-cert-facts.sql): an external JWT signer's
-- `commonName`, `notBefore` and `notAfter`, an authenticator's `publicKeyPrint`, filled by the services on every
-- write that sets `cert_pem`. A fresh PostgreSQL store has no rows yet: nothing to backfill.
ALTER TABLE external_jwt_signers ADD COLUMN cert_cn TEXT;
ALTER TABLE external_jwt_signers ADD COLUMN cert_not_before TEXT;
ALTER TABLE external_jwt_signers ADD COLUMN cert_not_after TEXT;
ALTER TABLE authenticators ADD COLUMN public_key_print TEXT;
