/**
 * Router enrollment methods (enrollment.md §2.7, §2.8, §3.3):
 *
 * - `erott` (edge routers) and `trott` (transit routers): the router presents the one-time token of its
 *   enrollment with two CSRs, usually for the same key: `serverCertCsr` for its listeners and `certCsr`
 *   (spec form: `clientCsr`) for its control-plane client certificate. It gets a server certificate with the
 *   server CSR's SANs, a client certificate with the client CSR's SANs, and the CA bundle. The client
 *   certificate's fingerprint and chain are stored on the router, which becomes verified, and the enrollment
 *   is consumed in the same transaction.
 * - `extend-router` (`POST /enroll/extend/router`): no token and no session. The router proves itself with
 *   its current client certificate over mutual TLS; new certificates are issued the same way and the stored
 *   fingerprint is replaced at once, so the old certificate stops identifying the router.
 *
 * The client CSR's CN must be the router id for `erott` and `extend-router`; `trott` overwrites it with the
 * router id. As upstream, a CN mismatch is reported as COULD_NOT_PROCESS_CSR, with the specific code in the
 * cause. Certificates are signed before the write transaction opens (signing is asynchronous); the
 * transaction re-checks that the enrollment (or the presented fingerprint) is still current, so two
 * concurrent requests with one token can not both succeed.
 */
import type { PeerCertificate } from 'node:tls';
import { ApiError, fieldError } from '../../errors.ts';
import { parseCsr, type ParsedCsr } from '../../pki/csr.ts';
import { sha1Fingerprint } from '../../pki/fingerprint.ts';
import type { IssuedCertificate, Issuer } from '../../pki/issue-certificate.ts';
import type { Store, Tx } from '../../store/store.ts';
import { isoNow, systemClock, type Clock } from '../../resources/entity-service.ts';
import type { EnrollInput, EnrollMethod, EnrollmentRow } from '../enroll-method.ts';

export interface RouterEnrollDeps {
  store: Store;
  pki: {
    issuer: Issuer;
    /** The well-known CA bundle, one PEM per certificate (enrollment.md §5). */
    caCertPems: readonly string[];
  };
  clock?: Clock;
}

interface RouterRow {
  id: string;
  isEdge: boolean;
}

interface RouterCertificates {
  client: IssuedCertificate;
  server: IssuedCertificate;
}

/** The `erott`, `trott` and `extend-router` methods, ready to push into the controller's enroll methods. */
export function createRouterEnrollMethods(deps: RouterEnrollDeps): EnrollMethod[] {
  const { store, pki } = deps;
  const clock = deps.clock ?? systemClock;

  /** The `ca` of router enroll responses: every bundle certificate, each preceded by a newline (as upstream). */
  const caField = pki.caCertPems.map((pem) => `\n${pem}`).join('');

  async function routerOf(id: string): Promise<RouterRow | undefined> {
    const row = await store.get<{ id: string; is_edge: number }>('SELECT id, is_edge FROM routers WHERE id = ?', [id]);
    return row ? { id: row.id, isEdge: row.is_edge === 1 } : undefined;
  }

  /** Parses both CSRs and issues the pair; `forceCommonName` is trott's CN overwrite. */
  async function issuePair(routerId: string, clientPem: string, serverPem: string, forceCommonName: boolean): Promise<RouterCertificates> {
    const serverCsr = await parseCsr(serverPem);
    const clientCsr = await parseCsr(clientPem);
    if (!forceCommonName) assertRouterCommonName(clientCsr, routerId);
    const server = await pki.issuer.issueServerCertificate(serverCsr, { now: clock.now() });
    const client = await pki.issuer.issueClientCertificate(clientCsr, {
      sans: clientCsr.sans,
      now: clock.now(),
      ...(forceCommonName ? { commonName: routerId } : {}),
    });
    return { client, server };
  }

  function tokenMethod(name: 'erott' | 'trott'): EnrollMethod {
    const edge = name === 'erott';
    return {
      name,
      usesToken: true,
      async enroll(input: EnrollInput) {
        const enrollment = input.enrollment;
        const router = enrollment?.routerId ? await routerOf(enrollment.routerId) : undefined;
        if (!enrollment || !router || enrollment.method !== name || router.isEdge !== edge) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
        const clientPem = nonEmpty(input.body.certCsr) ?? nonEmpty(input.body.clientCsr);
        const serverPem = nonEmpty(input.body.serverCertCsr);
        if (clientPem === undefined || serverPem === undefined) throw new ApiError('MISSING_OR_INVALID_CSR');

        const certs = await issuePair(router.id, clientPem, serverPem, !edge);
        await store.write(async (tx) => {
          await consume(tx, enrollment);
          await tx.run('UPDATE routers SET fingerprint = ?, cert_pem = ?, is_verified = 1, updated_at = ? WHERE id = ?', [
            certs.client.fingerprint,
            certs.client.chainPem,
            isoNow(clock),
            router.id,
          ]);
        });
        return { cert: certs.client.chainPem, serverCert: certs.server.chainPem, ca: caField };
      },
    };
  }

  const extendRouter: EnrollMethod = {
    name: 'extend-router',
    usesToken: false,
    async enroll(input: EnrollInput) {
      // The request schema requires both CSRs; a missing one is a validation failure before anything else.
      const clientPem = input.body.certCsr;
      const serverPem = input.body.serverCertCsr;
      if (typeof clientPem !== 'string') throw fieldError('certCsr', 'is required', clientPem ?? null);
      if (typeof serverPem !== 'string') throw fieldError('serverCertCsr', 'is required', serverPem ?? null);

      const presented = presentedRouterFingerprint(input.peerCertificates);
      const router = presented === undefined ? undefined : await routerByFingerprint(presented);
      if (!router || presented === undefined) throw new ApiError('UNAUTHORIZED');

      const certs = await issuePair(router.id, clientPem, serverPem, false);
      await store.write(async (tx) => {
        const changed = await tx.run('UPDATE routers SET fingerprint = ?, cert_pem = ?, updated_at = ? WHERE id = ? AND fingerprint = ?', [
          certs.client.fingerprint,
          certs.client.chainPem,
          isoNow(clock),
          router.id,
          presented,
        ]);
        // Another extension (or a re-enroll) replaced the certificate since we looked: it no longer identifies the router.
        if (changed.changes !== 1) throw new ApiError('UNAUTHORIZED');
      });
      return { cert: certs.client.chainPem, serverCert: certs.server.chainPem };
    },
  };

  /** Edge routers first, then transit routers, as upstream looks them up. */
  async function routerByFingerprint(fingerprint: string): Promise<RouterRow | undefined> {
    const row = await store.get<{ id: string; is_edge: number }>('SELECT id, is_edge FROM routers WHERE fingerprint = ? ORDER BY is_edge DESC, id LIMIT 1', [
      fingerprint,
    ]);
    return row ? { id: row.id, isEdge: row.is_edge === 1 } : undefined;
  }

  return [tokenMethod('erott'), tokenMethod('trott'), extendRouter];
}

/** Deletes the enrollment; when it is already gone another request used the token first. */
async function consume(tx: Tx, enrollment: EnrollmentRow): Promise<void> {
  const deleted = await tx.run('DELETE FROM enrollments WHERE id = ? AND token = ?', [enrollment.id, enrollment.token]);
  if (deleted.changes !== 1) throw new ApiError('INVALID_ENROLLMENT_TOKEN');
}

function assertRouterCommonName(csr: ParsedCsr, routerId: string): void {
  if (csr.commonName === routerId) return;
  throw new ApiError('COULD_NOT_PROCESS_CSR', {
    cause: {
      code: 'EDGE_ROUTER_ENROLL_COMMON_NAME_INVALID',
      message: `the client CSR's common name ${JSON.stringify(csr.commonName ?? '')} must be the router id ${routerId}`,
    },
  });
}

/**
 * The fingerprint a router identifies itself with: the last non-CA certificate of the presented chain (the
 * leaf, when the client also sent intermediates), as upstream picks it.
 */
function presentedRouterFingerprint(chain: readonly PeerCertificate[]): string | undefined {
  const leaves = chain.filter((cert) => !cert.ca);
  const leaf = leaves[leaves.length - 1];
  return leaf?.raw ? sha1Fingerprint(new Uint8Array(leaf.raw)) : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}
