/**
 * Authenticator rules: which fields each method needs, one authenticator per method per identity,
 * password hashing before the write, and the self-service variants that require the current password.
 */
import { identityRef } from '../entity-ref.ts';
import type { Values } from '../../store/entity-table.ts';
import type { Store } from '../../store/store.ts';
import { ApiError, fieldError, notFound } from '../../errors.ts';
import { hashPassword, verifyPassword } from '../../auth/password-hash.ts';
import { assertPasswordRules } from '../../auth/password-rules.ts';
import { createEntityService, systemClock, type Clock, type ListRequest } from '../entity-service.ts';
import { authenticatorResource } from './authenticator.resource.ts';
import { publicKeyPrint } from './cert-facts.ts';

const methods = new Set(['updb', 'cert']);

function checkLength(field: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'string' || value.length < min) throw fieldError(field, `${field} in body should be at least ${min} chars long`, value);
  if (value.length > max) throw fieldError(field, `${field} in body should be at most ${max} chars long`, value);
}

export interface CertificateInspector {
  /** Lower-case hex SHA-1 of a PEM certificate; throws ApiError when it is not one. */
  fingerprint(pem: string): string;
}

export function createAuthenticatorService(store: Store, certs: CertificateInspector, clock: Clock = systemClock) {
  const entities = createEntityService(
    authenticatorResource,
    store,
    {
      async beforeCreate(tx, values) {
        if (!(await tx.get('SELECT 1 FROM identities WHERE id = ?', [values.identityId]))) {
          throw notFound('identity', String(values.identityId));
        }
        const existing = await tx.get('SELECT 1 FROM authenticators WHERE identity_id = ? AND method = ?', [values.identityId, values.method]);
        if (existing) throw new ApiError('MAX_AUTHENTICATOR_METHODS_REACHED'); // without a cause, as upstream
      },
    },
    clock,
  );

  async function create(body: Record<string, unknown>): Promise<string> {
    const method = body.method;
    if (typeof method !== 'string' || !methods.has(method)) {
      throw fieldError('method', 'method must be one of [updb cert]', method);
    }
    if (method === 'updb') {
      if (body.certPem !== undefined && body.certPem !== null) throw new ApiError('INVALID_AUTHENTICATOR_PROPERTIES');
      checkLength('username', body.username, 4, 100);
      checkLength('password', body.password, 5, 100);
      if (typeof body.identityId === 'string') await assertPasswordRules(store, body.identityId, body.password as string);
      const passwordHash = await hashPassword(body.password as string);
      return entities.create({ ...body, certPem: undefined }, { passwordHash });
    }
    if (body.username !== undefined || body.password !== undefined) throw new ApiError('INVALID_AUTHENTICATOR_PROPERTIES');
    if (typeof body.certPem !== 'string' || body.certPem.trim() === '') throw fieldError('certPem', 'certPem is required', body.certPem);
    const fingerprint = certs.fingerprint(body.certPem);
    return entities.create(body, { fingerprint, isIssuedByNetwork: false, publicKeyPrint: publicKeyPrint(body.certPem) });
  }

  async function update(id: string, body: Record<string, unknown>, mode: 'put' | 'patch'): Promise<void> {
    const existing = await entities.get(id);
    const changesCredentials = (body.username ?? body.password) !== undefined && (body.username ?? body.password) !== null;
    if (existing.method !== 'updb' && changesCredentials) {
      throw new ApiError('CAN_NOT_UPDATE_AUTHENTICATOR', { cause: { code: 'UNHANDLED', message: 'only updb authenticators have a username and password' } });
    }
    const extra: Values = {};
    if (typeof body.password === 'string') {
      await assertPasswordRules(store, existing.identityId as string, body.password);
      extra.passwordHash = await hashPassword(body.password);
    }
    await entities.update(id, body, mode, extra);
  }

  /** Self-service update: the caller must own the authenticator and prove the current password. */
  async function updateOwn(identityId: string, id: string, body: Record<string, unknown>, mode: 'put' | 'patch'): Promise<void> {
    const existing = await entities.find(id);
    if (!existing || existing.identityId !== identityId) throw notFound('authenticator', id);
    if (existing.method !== 'updb') throw new ApiError('CAN_NOT_UPDATE_AUTHENTICATOR');
    const ok = await verifyPassword(existing.passwordHash as string, String(body.currentPassword ?? ''));
    if (!ok) {
      throw new ApiError('UNAUTHORIZED', { cause: { field: 'currentPassword', reason: 'invalid current password', value: '' } });
    }
    const { currentPassword: _ignored, ...rest } = body;
    await update(id, rest, mode);
  }

  function listForIdentity(identityId: string, req: ListRequest) {
    return entities.list(req, { sql: 'e.identity_id = ?', params: [identityId] });
  }

  async function findUpdbByUsername(username: string): Promise<Values | undefined> {
    const row = await store.get<{ id: string }>("SELECT id FROM authenticators WHERE method = 'updb' AND username = ?", [username]);
    return row ? entities.find(row.id) : undefined;
  }

  async function present(values: Values): Promise<Record<string, unknown>> {
    const detail = authenticatorResource.presentStored(values);
    const identityId = String(values.identityId);
    const identity = await store.get<{ name: string; auth_policy_id: string }>('SELECT name, auth_policy_id FROM identities WHERE id = ?', [identityId]);
    detail.identity = identityRef(identityId, identity?.name ?? '', identity?.auth_policy_id);
    // As upstream, an authenticator links to the identity it belongs to.
    detail._links = { ...(detail._links as object), identities: { href: `./identities/${identityId}` } };
    return detail;
  }

  return { ...entities, create, update, updateOwn, listForIdentity, findUpdbByUsername, present };
}

export type AuthenticatorService = ReturnType<typeof createAuthenticatorService>;
