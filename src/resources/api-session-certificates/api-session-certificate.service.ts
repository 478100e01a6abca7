/**
 * API-session certificates (client API `/current-api-session/certificates`): the caller sends a CSR and
 * receives a client certificate signed by the controller's signing CA, valid for 12 hours as upstream. The
 * certificate belongs to the caller's API session: it can be read and deleted only through that session,
 * it authenticates `method=cert` logins of the session's identity while the session lives, and it is
 * removed with the session (foreign-key cascade: logout, admin delete, idle timeout, identity disable or
 * delete).
 */
import { ApiError, notFound } from '../../errors.ts';
import type { Store } from '../../store/store.ts';
import { newEntityId } from '../../ids.ts';
import { parseCsr } from '../../pki/csr.ts';
import { readCertificateBundle } from '../../pki/certificate-chain.ts';
import type { Issuer } from '../../pki/issue-certificate.ts';
import { compileListQuery } from '../../query/index.ts';
import { filterableFields } from '../../query/symbols.ts';
import type { ListRequest } from '../entity-service.ts';
import { systemClock, type Clock } from '../entity-service.ts';
import type { ApiSessionService } from '../../auth/api-session.service.ts';
import { apiSessionCertificateSymbols } from './api-session-certificate.resource.ts';

/** Upstream signs API-session certificates for 12 hours. */
export const API_SESSION_CERTIFICATE_LIFETIME_MS = 12 * 60 * 60 * 1000;

export interface ApiSessionCertificateDeps {
  store: Store;
  pki: { issuer: Issuer; caBundlePem: string };
  /** The SPIFFE trust domain of the certificates' URIs (the controller's advertised host). */
  trustDomain?: string;
  apiSessions: Pick<ApiSessionService, 'get' | 'lastActivityMs' | 'timeoutMs'>;
  clock?: Clock;
}

interface Row {
  id: string;
  api_session_id: string;
  subject: string;
  fingerprint: string;
  valid_from: string;
  valid_to: string;
  certificate: string;
  created_at: string;
  updated_at: string;
  tags: string;
}

/**
 * The subject as Go's `pkix.Name.String()` renders it: RDNs from last to first, comma separated (node's
 * rendering lists them first to last, one per line).
 */
export function goSubjectString(nodeSubject: string): string {
  return nodeSubject
    .split('\n')
    .filter((line) => line !== '')
    .reverse()
    .join(',');
}

export function createApiSessionCertificateService(deps: ApiSessionCertificateDeps) {
  const { store, pki, apiSessions } = deps;
  const clock = deps.clock ?? systemClock;

  function present(row: Row): Record<string, unknown> {
    return {
      _links: { self: { href: `./current-api-session/certificates/${row.id}` } },
      createdAt: row.created_at,
      id: row.id,
      tags: JSON.parse(row.tags) as Record<string, unknown>,
      updatedAt: row.updated_at,
      certificate: row.certificate,
      fingerprint: row.fingerprint,
      subject: row.subject,
      validFrom: row.valid_from,
      validTo: row.valid_to,
    };
  }

  /**
   * Signs the CSR for the caller's API session; answers what the create response carries. The certificate names
   * its API session in a SPIFFE URI (`spiffe://<trust domain>/identity/<id>/apiSession/<id>/apiSessionCertificate/<id>`):
   * a router accepts it beside a JWT API session only when that URI names the token's `z_asid`.
   */
  async function create(apiSessionId: string, identityId: string, csrPem: string): Promise<{ id: string; certificate: string; cas: string }> {
    const csr = await parseCsr(csrPem);
    const now = clock.now();
    const notAfter = new Date(now.getTime() + API_SESSION_CERTIFICATE_LIFETIME_MS);
    const id = newEntityId();
    const uri = `spiffe://${deps.trustDomain ?? 'portcullis'}/identity/${identityId}/apiSession/${apiSessionId}/apiSessionCertificate/${id}`;
    const issued = await pki.issuer.issueClientCertificate(csr, { now, notAfter, sans: { dns: [], ip: [], email: [], uri: [uri] } });
    const parsed = readCertificateBundle(issued.certPem)[0];
    const at = now.toISOString();
    await store.write(async (tx) => {
      // The session may have ended while the certificate was signed; then there is nothing to attach it to.
      if (!(await tx.get('SELECT 1 FROM api_sessions WHERE id = ?', [apiSessionId]))) throw new ApiError('UNAUTHORIZED');
      await tx.run(
        `INSERT INTO api_session_certificates (id, api_session_id, subject, fingerprint, valid_from, valid_to, certificate, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          id,
          apiSessionId,
          goSubjectString(parsed.native.subject),
          issued.fingerprint,
          issued.notBefore.toISOString(),
          issued.notAfter.toISOString(),
          issued.certPem,
          at,
          at,
        ],
      );
    });
    return { id, certificate: issued.certPem, cas: pki.caBundlePem };
  }

  /** The certificates of one API session, with the usual filter, sort and paging. */
  async function list(apiSessionId: string, req: ListRequest) {
    const q = compileListQuery(apiSessionCertificateSymbols, req, store.dialect);
    const scoped = { ...q, where: `(${q.where}) AND e.api_session_id = ?`, params: [...q.params, apiSessionId] };
    const { rows, totalCount } = await store.page('api_session_certificates', scoped);
    return {
      items: (rows as unknown as Row[]).map(present),
      page: { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited },
      filterableFields: filterableFields(apiSessionCertificateSymbols),
    };
  }

  /** One certificate of the session; another session's certificate is as unknown as a missing one. */
  async function get(apiSessionId: string, id: string): Promise<Record<string, unknown>> {
    const row = await store.get<Row>('SELECT * FROM api_session_certificates WHERE id = ?', [id]);
    if (!row || row.api_session_id !== apiSessionId) throw notFound('apiSessionCertificate', id);
    return present(row);
  }

  async function remove(apiSessionId: string, id: string): Promise<void> {
    await store.write(async (tx) => {
      const deleted = await tx.run('DELETE FROM api_session_certificates WHERE id = ? AND api_session_id = ?', [id, apiSessionId]);
      if (deleted.changes === 0) throw notFound('apiSessionCertificate', id);
    });
  }

  /**
   * For certificate login: the identity a presented certificate names when it is an unexpired certificate
   * of an API session that is still alive. The new session keeps the old session's authenticator id.
   */
  async function identityFor(fingerprint: string, at: Date): Promise<{ identityId: string; authenticatorId: string } | undefined> {
    const row = await store.get<Pick<Row, 'api_session_id' | 'valid_from' | 'valid_to'>>(
      'SELECT api_session_id, valid_from, valid_to FROM api_session_certificates WHERE fingerprint = ?',
      [fingerprint],
    );
    if (!row) return undefined;
    const now = at.getTime();
    if (Date.parse(row.valid_to) <= now || Date.parse(row.valid_from) > now + 60_000) return undefined;
    const session = await apiSessions.get(row.api_session_id);
    if (!session || apiSessions.lastActivityMs(session) + apiSessions.timeoutMs <= now) return undefined;
    return { identityId: session.identityId, authenticatorId: session.authenticatorId };
  }

  return { create, list, get, remove, identityFor, present };
}

export type ApiSessionCertificateService = ReturnType<typeof createApiSessionCertificateService>;
