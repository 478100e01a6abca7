/**
 * Certificate extension by the identity itself (enrollment.md §6.1, seeds management §3): over mutual
 * TLS with its current network-issued certificate, the caller submits a CSR and receives a new client
 * certificate, which is held as pending (`unverified_cert_pem`) while the old one keeps working. Submitting
 * the new certificate back (extend-verify) makes it the authenticator's certificate. Only certificates the
 * controller issued can be extended; third-party ones are refused.
 */
import type { PeerCertificate } from 'node:tls';
import { ApiError, notFound } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { parseCsr } from '../../pki/csr.ts';
import type { Issuer } from '../../pki/issue-certificate.ts';
import { readCertificateBundle, readPeerCertificates, verifyChain, type ParsedCertificate } from '../../pki/certificate-chain.ts';
import { isoNow, systemClock, type Clock } from '../entity-service.ts';
import { publicKeyPrint } from './cert-facts.ts';

export interface CertificateExtensionDeps {
  store: Store;
  pki: {
    issuer: Issuer;
    /** The well-known CA bundle, one PEM per certificate. */
    caCertPems: readonly string[];
  };
  clock?: Clock;
}

interface AuthenticatorRow {
  id: string;
  identity_id: string;
  method: string;
  cert_pem: string | null;
  fingerprint: string | null;
  is_issued_by_network: number;
  unverified_cert_pem: string | null;
  unverified_fingerprint: string | null;
}

const cannotUpdate = (message: string) => new ApiError('CAN_NOT_UPDATE_AUTHENTICATOR', { cause: { code: 'UNHANDLED', message } });

export function createCertificateExtension(deps: CertificateExtensionDeps) {
  const { store, pki } = deps;
  const clock = deps.clock ?? systemClock;
  const bundle = pki.caCertPems.flatMap((pem) => readCertificateBundle(pem));
  /** The `ca` of the extend response: the bundle, each certificate preceded by a newline (as upstream). */
  const caField = pki.caCertPems.map((pem) => `\n${pem}`).join('');

  async function load(id: string): Promise<AuthenticatorRow> {
    const row = await store.get<AuthenticatorRow>(
      'SELECT id, identity_id, method, cert_pem, fingerprint, is_issued_by_network, unverified_cert_pem, unverified_fingerprint FROM authenticators WHERE id = ?',
      [id],
    );
    if (!row) throw notFound('authenticator', id);
    return row;
  }

  function presented(peers: readonly PeerCertificate[]): ParsedCertificate[] {
    let chain: ParsedCertificate[] = [];
    try {
      chain = readPeerCertificates(peers);
    } catch {
      // An unreadable certificate is no certificate.
    }
    if (chain.length === 0) throw new ApiError('UNAUTHORIZED'); // without a cause, as upstream
    return chain;
  }

  /** `POST /current-identity/authenticators/{id}/extend`: issues the new certificate, held as pending. */
  async function extend(callerIdentityId: string, id: string, clientCertCsr: string, peers: readonly PeerCertificate[]) {
    const chain = presented(peers);
    const row = await load(id);
    if (row.method !== 'cert' || row.is_issued_by_network !== 1 || !row.cert_pem) {
      throw cannotUpdate('only certificates issued by the network can be extended');
    }
    if (row.identity_id !== callerIdentityId) throw new ApiError('UNAUTHORIZED');
    const leaf = chain[0];
    if (leaf.fingerprint !== row.fingerprint) {
      throw new ApiError('UNAUTHORIZED', { cause: { code: 'UNHANDLED', message: 'the presented certificate is not the certificate of this authenticator' } });
    }
    if (!verifyChain(leaf, { roots: bundle, intermediates: chain.slice(1), clientAuth: true })) {
      throw new ApiError('UNAUTHORIZED', { cause: { code: 'UNHANDLED', message: 'the presented certificate was not issued by the network' } });
    }
    const csr = await parseCsr(clientCertCsr);
    // The SANs (e.g. a SPIFFE id) carry over from the current certificate; the subject comes from the CSR.
    const current = readCertificateBundle(row.cert_pem)[0];
    const issued = await pki.issuer.issueClientCertificate(csr, { sans: current.sans, now: clock.now() });
    await store.write(async (tx) => {
      const updated = await tx.run(
        'UPDATE authenticators SET unverified_cert_pem = ?, unverified_fingerprint = ?, updated_at = ? WHERE id = ? AND fingerprint = ?',
        [issued.certPem, issued.fingerprint, isoNow(clock), row.id, leaf.fingerprint],
      );
      if (updated.changes !== 1) throw cannotUpdate('the authenticator changed while the certificate was issued');
    });
    return { ca: caField, clientCert: issued.chainPem };
  }

  /** `POST /current-identity/authenticators/{id}/extend-verify`: the pending certificate becomes current. */
  async function verify(callerIdentityId: string, id: string, clientCert: string): Promise<void> {
    const row = await load(id);
    if (row.method !== 'cert' || !row.cert_pem) throw cannotUpdate('only certificate authenticators can be extended');
    if (row.identity_id !== callerIdentityId) throw new ApiError('UNAUTHORIZED');
    if (!row.unverified_cert_pem || !row.unverified_fingerprint) throw cannotUpdate('no certificate extension is pending');
    let submitted: ParsedCertificate | undefined;
    try {
      submitted = readCertificateBundle(clientCert)[0];
    } catch {
      submitted = undefined;
    }
    if (!submitted || submitted.fingerprint !== row.unverified_fingerprint) {
      throw new ApiError('INVALID_CLIENT_CERT', { cause: { code: 'UNHANDLED', message: 'the certificate is not the one issued by the pending extension' } });
    }
    const previous = readCertificateBundle(row.cert_pem)[0];
    const rolledKeys = previous === undefined || previous.publicKeyPrint !== submitted.publicKeyPrint;
    // The pending certificate (matched by its fingerprint below) becomes cert_pem: its public key print goes with it.
    const print = publicKeyPrint(row.unverified_cert_pem);
    await store.write(async (tx) => {
      const updated = await tx.run(
        `UPDATE authenticators SET cert_pem = unverified_cert_pem, fingerprint = unverified_fingerprint, unverified_cert_pem = NULL,
           unverified_fingerprint = NULL, is_extend_requested = 0, is_key_roll_requested = 0, extend_requested_at = NULL,
           last_extend_rolled_keys = ?, public_key_print = ?, updated_at = ?
         WHERE id = ? AND unverified_fingerprint = ?`,
        [rolledKeys ? 1 : 0, print, isoNow(clock), row.id, submitted.fingerprint],
      );
      if (updated.changes !== 1) throw cannotUpdate('the pending extension changed meanwhile');
      // Sessions stop asking for an extension that has happened.
      await tx.run('UPDATE api_sessions SET is_cert_extend_requested = 0, is_cert_key_roll_requested = 0 WHERE authenticator_id = ?', [row.id]);
    });
  }

  return { extend, verify };
}

export type CertificateExtension = ReturnType<typeof createCertificateExtension>;
