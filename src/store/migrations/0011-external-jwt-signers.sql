-- External JWT signers: a configured kid names one signer only (signers without a kid are not limited).
CREATE UNIQUE INDEX external_jwt_signers_kid ON external_jwt_signers(kid) WHERE kid IS NOT NULL;
