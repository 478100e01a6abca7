/**
 * Identity rules beyond generic CRUD: the stored type is always `Default` (upstream ignores the requested
 * type on create and refuses a change to `Router`), referenced auth policies and services must exist, the
 * default admin can not be deleted, and the read model's computed parts (type and auth policy refs,
 * authenticator summary, session and disable flags).
 */
import { entityRef } from '../entity-ref.ts';
import type { Values } from '../../store/entity-table.ts';
import type { Store, Tx } from '../../store/store.ts';
import { versionedLookup } from '../../store/versioned-lookup.ts';
import { ApiError, fieldError, notFound } from '../../errors.ts';
import { newShortId } from '../../ids.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import { identityResource } from './identity.resource.ts';
import { normalizeRoleAttributes, type AccessService } from '../../access/access.service.ts';
import type { InlineEnrollmentRequest, PendingEnrollment } from '../../enrollment/enrollment.service.ts';

/** What identity create needs from the enrollment service for an inline `enrollment` (ott, ottca, updb). */
export interface InlineEnrollments {
  /** Signs the requested enrollment for the new identity id (before any transaction); undefined for none. */
  prepareInline(identityId: string, request: InlineEnrollmentRequest | undefined): Promise<PendingEnrollment | undefined>;
  /** Stores it inside the identity's create transaction. */
  insertInline(tx: Tx, pending: PendingEnrollment): Promise<void> | void;
  /** The read model's `enrollment` object. */
  identitySummary(identityId: string): Promise<Record<string, unknown>> | Record<string, unknown>;
}

export interface IdentitySummary {
  id: string;
  name: string;
  isAdmin: boolean;
  isDefaultAdmin: boolean;
  permissions: string[];
  authPolicyId: string;
  disabled: boolean;
}

/** Upstream folds the legacy types User, Device and Service into Default. */
function storedType(requested: unknown): string {
  if (requested === 'Router') throw fieldError('type', 'may not change type to router', requested);
  return 'Default';
}

export function isDisabledNow(disabledAt: unknown, disabledUntil: unknown, now: Date): boolean {
  if (!disabledAt) return false;
  return !disabledUntil || new Date(disabledUntil as string).getTime() > now.getTime();
}

/** An empty or null auth policy id (consoles send `""`) means the default policy; any other must exist. */
async function resolveAuthPolicy(tx: Tx, values: Values): Promise<void> {
  if (values.authPolicyId === '' || values.authPolicyId === null) values.authPolicyId = 'default';
  const id = values.authPolicyId;
  if (id !== undefined && !(await tx.get('SELECT 1 FROM auth_policies WHERE id = ?', [id]))) throw notFound('authPolicy', String(id));
}

/** Hosting cost/precedence maps are keyed by service id; each must name an existing service. */
async function assertServiceKeys(tx: Tx, values: Values): Promise<void> {
  for (const field of ['serviceHostingCosts', 'serviceHostingPrecedences']) {
    const map = values[field] as Record<string, unknown> | undefined;
    for (const serviceId of Object.keys(map ?? {})) {
      const exists = await tx.get('SELECT 1 FROM services WHERE id = ?', [serviceId]);
      if (!exists) throw notFound('service', serviceId);
    }
  }
}

export function createIdentityService(store: Store, access: AccessService, clock: Clock = systemClock, enrollments?: InlineEnrollments) {
  const entities = createEntityService(
    identityResource,
    store,
    {
      newId: () => newShortId(),
      async beforeCreate(tx, values) {
        // Upstream ignores the requested type on create: every REST-created identity is Default.
        values.type = 'Default';
        values.roleAttributes = normalizeRoleAttributes(values.roleAttributes as string[], { checkPrefix: true });
        await resolveAuthPolicy(tx, values);
        await assertServiceKeys(tx, values);
      },
      async afterCreate(tx, values) {
        await access.entityChanged(tx, 'identity', values.id as string, values.roleAttributes as string[]);
      },
      async afterUpdate(tx, existing, changes) {
        if (changes.roleAttributes !== undefined) await access.entityChanged(tx, 'identity', existing.id as string, changes.roleAttributes as string[]);
      },
      async beforeUpdate(tx, existing, changes) {
        if (changes.type !== undefined) {
          if (existing.type === 'Router' && changes.type !== 'Router') throw fieldError('type', 'may not change the type of a router identity', changes.type);
          changes.type = existing.type === 'Router' ? 'Router' : storedType(changes.type);
        }
        // A tunneler router's identity carries its router's name; renaming the router renames both.
        if (existing.type === 'Router' && changes.name !== undefined && changes.name !== existing.name && (await tx.get('SELECT 1 FROM routers WHERE id = ?', [existing.id]))) {
          throw fieldError('name', 'may not change name of router identities', changes.name);
        }
        if (existing.isDefaultAdmin && changes.isAdmin === false) {
          throw new ApiError('ENTITY_CAN_NOT_BE_UPDATED', { cause: { code: 'UNHANDLED', message: 'the default admin must remain an admin' } });
        }
        if (changes.roleAttributes !== undefined) changes.roleAttributes = normalizeRoleAttributes(changes.roleAttributes as string[], { checkPrefix: true });
        await resolveAuthPolicy(tx, changes);
        await assertServiceKeys(tx, changes);
      },
      async beforeDelete(tx, existing) {
        if (existing.isDefaultAdmin) {
          throw new ApiError('ENTITY_CAN_NOT_BE_DELETED', { cause: { code: 'UNHANDLED', message: 'cannot delete default admin' } });
        }
        // A tunneler router's identity lives and dies with its router (upstream model §3.14).
        if (existing.type === 'Router' && (await tx.get('SELECT 1 FROM routers WHERE id = ?', [existing.id]))) {
          throw new ApiError('ENTITY_CAN_NOT_BE_DELETED', { cause: { code: 'UNHANDLED', message: 'cannot delete router identity while its router exists' } });
        }
        await access.entityRemoved(tx, 'identity', existing.id as string);
      },
    },
    clock,
  );

  async function authenticatorSummary(identityId: string) {
    const rows = await store.all<{
      id: string;
      method: string;
      username: string | null;
      fingerprint: string | null;
    }>('SELECT id, method, username, fingerprint FROM authenticators WHERE identity_id = ?', [identityId]);
    const out: Record<string, unknown> = {};
    for (const r of rows) {
      if (r.method === 'updb') out.updb = { id: r.id, username: r.username ?? '' };
      else if (r.method === 'cert') out.cert = { id: r.id, fingerprint: r.fingerprint ?? '' };
    }
    return out;
  }

  /**
   * What the read model takes from other tables, per identity and auth policy, kept while those tables are
   * unchanged (src/store/versioned-lookup.ts): on PostgreSQL `GET /current-identity` then reads nothing.
   */
  const factsOf = versionedLookup(store, ['auth_policies', 'authenticators', 'enrollments', 'cas', 'api_sessions', 'identity_router_connections', 'mfas'], async (key: string) => {
    const [id, policyId] = key.split('\n') as [string, string];
    const policy = await store.get<{ name: string }>('SELECT name FROM auth_policies WHERE id = ?', [policyId]);
    return {
      policyName: policy?.name,
      authenticators: await authenticatorSummary(id),
      enrollment: enrollments ? await enrollments.identitySummary(id) : {},
      hasApiSession: (await store.get('SELECT 1 FROM api_sessions WHERE identity_id = ? LIMIT 1', [id])) !== undefined,
      // Routers report which identities have an SDK connected (src/fabric).
      hasEdgeRouterConnection: (await store.get('SELECT 1 FROM identity_router_connections WHERE identity_id = ? LIMIT 1', [id])) !== undefined,
      // MFA is enabled once the identity's TOTP enrollment is verified (auth.md §4.4).
      isMfaEnabled: (await store.get('SELECT 1 FROM mfas WHERE identity_id = ? AND is_verified = 1', [id])) !== undefined,
    };
  });

  /** The stored identity, kept while no identity changed (the caller's own, read on every `GET /current-identity`). */
  const currentValues = versionedLookup(store, ['identities'], (id: string) => entities.get(id));

  /** The identity read model (identityDetail). */
  async function present(values: Values): Promise<Record<string, unknown>> {
    const detail = identityResource.presentStored(values);
    const id = values.id as string;
    const typeId = values.type as string;
    const policyId = (values.authPolicyId as string) || 'default';
    const facts = (await factsOf(`${id}\n${policyId}`))!;
    detail.type = entityRef('identity-types', typeId, typeId);
    detail.typeId = typeId;
    detail.authPolicyId = policyId;
    detail.authPolicy = facts.policyName !== undefined ? entityRef('auth-policies', policyId, facts.policyName) : null;
    detail._links = { ...(detail._links as object), 'auth-policies': { href: `./auth-policies/${policyId}` } };
    // Copies: the kept facts are shared by every request.
    detail.authenticators = structuredClone(facts.authenticators);
    detail.enrollment = structuredClone(facts.enrollment);
    detail.disabled = isDisabledNow(values.disabledAt, values.disabledUntil, clock.now());
    if (values.disabledAt == null) delete detail.disabledAt;
    if (values.disabledUntil == null) delete detail.disabledUntil;
    detail.hasApiSession = facts.hasApiSession;
    detail.hasEdgeRouterConnection = facts.hasEdgeRouterConnection;
    detail.edgeRouterConnectionStatus = detail.hasEdgeRouterConnection ? 'online' : 'offline';
    detail.isMfaEnabled = facts.isMfaEnabled;
    detail.interfaces = null;
    detail.roleAttributes = values.roleAttributes ?? [];
    return detail;
  }

  /** What authentication and permission checks need, in one cheap query. */
  async function summary(id: string): Promise<IdentitySummary | undefined> {
    const row = await store.get(
      'SELECT id, name, is_admin, is_default_admin, permissions, auth_policy_id, disabled_at, disabled_until FROM identities WHERE id = ?',
      [id],
    );
    if (!row) return undefined;
    return {
      id: row.id as string,
      name: row.name as string,
      isAdmin: row.is_admin === 1,
      isDefaultAdmin: row.is_default_admin === 1,
      permissions: row.permissions ? (JSON.parse(row.permissions as string) as string[]) : [],
      authPolicyId: row.auth_policy_id as string,
      disabled: isDisabledNow(row.disabled_at, row.disabled_until, clock.now()),
    };
  }

  /**
   * Create with the optional inline `enrollment` of the request: the enrollment JWT names the identity,
   * so its id is chosen and the JWT signed first; identity and enrollment are then written in one
   * transaction.
   */
  async function createWithEnrollment(body: Record<string, unknown>): Promise<string> {
    const request = body.enrollment as InlineEnrollmentRequest | undefined;
    if (!enrollments || !request) return entities.create(body);
    const id = newShortId();
    const enrollment = await enrollments.prepareInline(id, request);
    // The enrollment JWT names the identity, so its id is chosen first; the enrollment is stored in the same transaction.
    const inline = enrollments;
    return entities.create(body, {}, { id, within: enrollment ? async (tx) => inline.insertInline(tx, enrollment) : undefined });
  }

  return { ...entities, present, summary, createWithEnrollment, currentValues };
}

export type IdentityService = ReturnType<typeof createIdentityService>;
