/**
 * Certificate fingerprints in upstream's one format: lower-case hex SHA-1 of the certificate DER, 40
 * characters, no separators. They identify cert authenticators, routers and CAs, and the server
 * certificate's fingerprint is the `kid` of every JWT the controller signs, so every caller must compute
 * it the same way: here.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { ApiError } from '../errors.ts';
import { certificateDer } from './pem.ts';

/** SHA-1 fingerprint of a certificate given as PEM (first CERTIFICATE block) or as DER bytes. */
export function sha1Fingerprint(pemOrDer: string | Uint8Array): string {
  const der = typeof pemOrDer === 'string' ? certificateDer(pemOrDer) : pemOrDer;
  return createHash('sha1').update(der).digest('hex');
}

/** Fingerprint of a PEM certificate that must really parse as X.509 (authenticators given by an admin). */
export function verifiedCertificateFingerprint(pem: string): string {
  const der = certificateDer(pem);
  try {
    new X509Certificate(Buffer.from(der));
  } catch {
    throw new ApiError('COULD_NOT_PARSE_DER_BLOCK');
  }
  return createHash('sha1').update(der).digest('hex');
}
