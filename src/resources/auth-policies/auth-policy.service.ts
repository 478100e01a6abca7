/**
 * Auth policy rules beyond generic CRUD (auth.md §1.8, model.md §3.12):
 *
 * - normalisation on save: negative `lockoutDurationMinutes` and `maxAttempts` become 0, a
 *   `minPasswordLength` below 5 becomes 5, a blank `requireExtJwtSigner` means none;
 * - every signer in `allowedSigners` and the `requireExtJwtSigner` must exist (404 with a field cause);
 * - patch merges the supplied members into the stored settings (null means "not supplied", except that an
 *   explicit null `requireExtJwtSigner` clears it);
 * - a policy that identities or external JWT signers (enrollment policy) reference can not be deleted
 *   (409), and the system `default` policy can be updated but never deleted.
 */
import type { Values } from '../../store/entity-table.ts';
import type { Sql, Store } from '../../store/store.ts';
import { ApiError, formatCauseValue } from '../../errors.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import { authPolicyResource, defaultAuthPolicy } from './auth-policy.resource.ts';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Copies the non-null members of `patch` over `base`, recursively for nested objects. */
function mergeSupplied(base: Json, patch: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || value === undefined) continue;
    out[key] = isObject(value) && isObject(base[key]) ? mergeSupplied(base[key] as Json, value) : value;
  }
  return out;
}

function signerNotFound(field: string, id: string): ApiError {
  return new ApiError('NOT_FOUND', {
    cause: { field, reason: `external jwt signer with id ${id} not found`, value: formatCauseValue(id) },
  });
}

/** The stored primary settings with every member present (defaults as upstream's store reads them). */
export function normalizePrimary(primary: Json): Json {
  const d = defaultAuthPolicy.primary;
  const cert = { ...d.cert, ...(isObject(primary.cert) ? primary.cert : {}) };
  const updb = { ...d.updb, ...(isObject(primary.updb) ? primary.updb : {}) } as Record<string, number | boolean>;
  const extJwt = { ...d.extJwt, ...(isObject(primary.extJwt) ? primary.extJwt : {}) };
  if ((updb.lockoutDurationMinutes as number) < 0) updb.lockoutDurationMinutes = 0;
  if ((updb.maxAttempts as number) < 0) updb.maxAttempts = 0;
  if ((updb.minPasswordLength as number) < 5) updb.minPasswordLength = 5;
  extJwt.allowedSigners = [...new Set((extJwt.allowedSigners as string[] | null) ?? [])];
  return { cert, extJwt, updb };
}

function normalizeSecondary(secondary: Json): Json {
  const signer = secondary.requireExtJwtSigner;
  return {
    requireTotp: secondary.requireTotp === true,
    requireExtJwtSigner: typeof signer === 'string' && signer.trim() !== '' ? signer : null,
  };
}

async function checkSigners(q: Sql, primary: Json, secondary: Json): Promise<void> {
  const exists = 'SELECT 1 FROM external_jwt_signers WHERE id = ?';
  for (const id of (primary.extJwt as Json).allowedSigners as string[]) {
    if (!(await q.get(exists, [id]))) throw signerNotFound('primary.extJwt.allowedSigners', id);
  }
  const required = secondary.requireExtJwtSigner;
  if (typeof required === 'string' && !(await q.get(exists, [required]))) throw signerNotFound('secondary.requireExtJwtSigner', required);
}

async function referencedBy(q: Sql, id: string): Promise<Array<[string, string[]]>> {
  const identities = await q.column<string>('SELECT id FROM identities WHERE auth_policy_id = ? ORDER BY id', [id]);
  const signers = await q.column<string>('SELECT id FROM external_jwt_signers WHERE enroll_auth_policy_id = ? ORDER BY id', [id]);
  const out: Array<[string, string[]]> = [];
  if (identities.length > 0) out.push(['identities', identities]);
  if (signers.length > 0) out.push(['externalJwtSigners', signers]);
  return out;
}

export function createAuthPolicyService(store: Store, clock: Clock = systemClock) {
  const entities = createEntityService(
    authPolicyResource,
    store,
    {
      async beforeCreate(tx, values) {
        values.primary = normalizePrimary(values.primary as Json);
        values.secondary = normalizeSecondary(values.secondary as Json);
        await checkSigners(tx, values.primary as Json, values.secondary as Json);
      },
      async beforeUpdate(tx, existing, changes, mode, body) {
        if (mode === 'patch') {
          if (isObject(body.primary)) changes.primary = mergeSupplied(existing.primary as Json, body.primary);
          if (isObject(body.secondary)) {
            const merged = mergeSupplied(existing.secondary as Json, body.secondary);
            if ('requireExtJwtSigner' in body.secondary && body.secondary.requireExtJwtSigner === null) merged.requireExtJwtSigner = null;
            changes.secondary = merged;
          }
        }
        const primary = normalizePrimary((changes.primary ?? existing.primary) as Json);
        const secondary = normalizeSecondary((changes.secondary ?? existing.secondary) as Json);
        if (changes.primary !== undefined) changes.primary = primary;
        if (changes.secondary !== undefined) changes.secondary = secondary;
        await checkSigners(tx, primary, secondary);
      },
      async beforeDelete(tx, existing) {
        const id = existing.id as string;
        const refs = await referencedBy(tx, id);
        if (refs.length > 0) {
          const text = refs.map(([kind, ids]) => `${kind} with id(s) [${ids.join(' ')}]`).join(' and ');
          throw new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
            cause: {
              code: 'UNHANDLED',
              message: `cannot delete auth-policies with id ${id}, it is referenced by ${text}`,
              data: Object.fromEntries(refs.map(([kind, ids]) => [`${kind.replace(/s$/, '')}Ids`, ids])),
            },
          });
        }
        if (existing.isSystem || id === defaultAuthPolicy.id) {
          throw new ApiError('ENTITY_CAN_NOT_BE_DELETED', { cause: { code: 'UNHANDLED', message: `cannot delete system auth policy ${id}` } });
        }
      },
    },
    clock,
  );

  /** authPolicyDetail. */
  function present(values: Values): Record<string, unknown> {
    const out = authPolicyResource.presentStored(values);
    out.primary = normalizePrimary((values.primary ?? {}) as Json);
    const secondary = normalizeSecondary((values.secondary ?? {}) as Json);
    out.secondary = secondary.requireExtJwtSigner ? secondary : { requireTotp: secondary.requireTotp };
    return out;
  }

  return { ...entities, present };
}

export type AuthPolicyService = ReturnType<typeof createAuthPolicyService>;
