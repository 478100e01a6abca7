-- Auth policy lockout: consecutive failed password logins per updb authenticator (reset by a successful
-- login and when the lockout triggers). The lockout itself disables the identity until a time
-- (identities.disabled_at / disabled_until), as upstream does.
ALTER TABLE authenticators ADD COLUMN failed_attempts INTEGER NOT NULL DEFAULT 0;
