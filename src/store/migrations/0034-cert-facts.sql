-- Facts of stored certificates that filters read: an external JWT signer's `commonName`, `notBefore` and
-- `notAfter`, an authenticator's `publicKeyPrint`. Filters used to compute them per row with SQL functions
-- registered on the SQLite connection (store/database.ts); they are kept in columns instead, so that every engine
-- can filter on them. The services fill them on every write that sets `cert_pem` (null when the PEM is
-- unreadable; the CN is '' when the subject has none; ISO-8601 times; hex SHA-256 of the public key's SPKI DER),
-- and the rows already stored get them here from those same functions.
ALTER TABLE external_jwt_signers ADD COLUMN cert_cn TEXT;
ALTER TABLE external_jwt_signers ADD COLUMN cert_not_before TEXT;
ALTER TABLE external_jwt_signers ADD COLUMN cert_not_after TEXT;
ALTER TABLE authenticators ADD COLUMN public_key_print TEXT;
UPDATE external_jwt_signers
   SET cert_cn = pc_cert_cn(cert_pem), cert_not_before = pc_cert_not_before(cert_pem), cert_not_after = pc_cert_not_after(cert_pem)
 WHERE cert_pem IS NOT NULL;
UPDATE authenticators SET public_key_print = pc_public_key_print(cert_pem) WHERE cert_pem IS NOT NULL;
