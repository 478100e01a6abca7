/**
 * Facts of a stored PEM certificate that filters read (external JWT signers' `commonName`, `notBefore` and
 * `notAfter`, authenticators' `publicKeyPrint`). They are kept in columns beside `cert_pem` (migration 0034,
 * backfilled there by the SQLite functions of store/database.ts that compute the same answers), so every
 * write that sets `cert_pem` sets them too, from these functions. Null when the PEM is absent or unreadable.
 */
import { X509Certificate, createHash } from 'node:crypto';

function readCertificate(pem: unknown): X509Certificate | undefined {
  if (typeof pem !== 'string' || pem === '') return undefined;
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

function fact(pem: unknown, read: (cert: X509Certificate) => string): string | null {
  const cert = readCertificate(pem);
  if (!cert) return null;
  try {
    return read(cert);
  } catch {
    return null;
  }
}

/** The subject's CN ('' when the subject has none). */
export function certCommonName(pem: unknown): string | null {
  return fact(pem, (c) => /^CN=(.*)$/m.exec(c.subject)?.[1] ?? '');
}

export function certNotBefore(pem: unknown): string | null {
  return fact(pem, (c) => new Date(c.validFrom).toISOString());
}

export function certNotAfter(pem: unknown): string | null {
  return fact(pem, (c) => new Date(c.validTo).toISOString());
}

/** Lower-case hex SHA-256 of the certificate's public key (SubjectPublicKeyInfo DER), as upstream computes it. */
export function publicKeyPrint(pem: unknown): string | null {
  return fact(pem, (c) => createHash('sha256').update(c.publicKey.export({ type: 'spki', format: 'der' })).digest('hex'));
}

/** The stored facts of an external JWT signer's certificate, by wire field of the signer resource. */
export function signerCertFacts(pem: unknown): { certCommonName: string | null; certNotBefore: string | null; certNotAfter: string | null } {
  return { certCommonName: certCommonName(pem), certNotBefore: certNotBefore(pem), certNotAfter: certNotAfter(pem) };
}
