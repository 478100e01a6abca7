/**
 * What the two third-party CA enrollment methods (`ottca`, `ca`) share: reading the TLS peer chain,
 * verifying it against one CA for enrollment (clientAuth, valid now), the CERT_IN_USE check, and writing
 * the certificate authenticator that remembers the CA.
 */
import type { PeerCertificate } from 'node:tls';
import { ApiError } from '../../errors.ts';
import { readPeerCertificates, verifyChain, type ParsedCertificate } from '../../pki/certificate-chain.ts';
import { newEntityId } from '../../ids.ts';
import type { Sql, Tx } from '../../store/store.ts';
import type { TrustedCa } from '../../resources/cas/ca.service.ts';

/** The presented chain, leaf first; undefined when no (readable) certificate was presented. */
export function presentedChain(peers: readonly PeerCertificate[]): ParsedCertificate[] | undefined {
  try {
    const chain = readPeerCertificates(peers);
    return chain.length > 0 ? chain : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The chain from the presented leaf to the CA, as enrollment requires it (enrollment.md §2.4-2.5): roots
 * are every certificate of the CA's certPem, intermediates the rest of the presented chain, the leaf must
 * allow client authentication and every certificate must be valid now.
 */
export function chainToCa(chain: ParsedCertificate[], ca: TrustedCa, now: Date): ParsedCertificate[] | undefined {
  return verifyChain(chain[0], { roots: ca.certificates, intermediates: chain.slice(1), at: now, clientAuth: true });
}

/** 409 CERT_IN_USE when the fingerprint already identifies an authenticator (current or pending). */
export async function assertCertificateUnused(q: Sql, fingerprint: string, withData: boolean): Promise<void> {
  const used = await q.get('SELECT 1 FROM authenticators WHERE fingerprint = ? OR unverified_fingerprint = ?', [fingerprint, fingerprint]);
  if (used) {
    throw new ApiError('CERT_IN_USE', withData ? { cause: { message: 'the certificate is already in use', data: { fingerprint } } } : {});
  }
}

export interface NewCertAuthenticator {
  identityId: string;
  caId: string;
  certPem: string;
  fingerprint: string;
  now: string;
}

/** Inserts a `cert` authenticator issued outside the network (isIssuedByNetwork false), tied to its CA. */
export async function insertCaAuthenticator(tx: Tx, a: NewCertAuthenticator): Promise<string> {
  const id = newEntityId();
  await tx.run(
    `INSERT INTO authenticators (id, identity_id, method, cert_pem, fingerprint, is_issued_by_network, ca_id, created_at, updated_at)
     VALUES (?, ?, 'cert', ?, ?, 0, ?, ?, ?)`,
    [id, a.identityId, a.certPem, a.fingerprint, a.caId, a.now, a.now],
  );
  return id;
}
