/**
 * An enrollment's token and JWT let whoever holds them enroll as its identity. A reader that is not an admin
 * (a holder of `enrollment.read`, `identity.read` or `admin_readonly`) is shown them only for identities whose
 * rights it holds itself (auth/rights.ts); for the others the record stays listed without its `jwt`, and with
 * an empty `token` where the read model requires one.
 */
import type { FastifyRequest } from 'fastify';
import { isAdmin, type PermissionHolder } from '../../auth/permissions.ts';
import { covers } from '../../auth/rights.ts';
import { callerOf } from '../../http/caller.ts';
import type { Sql } from '../../store/store.ts';
import { identityRights } from '../identities/identity-rights.ts';

function withoutSecrets(enrollment: Record<string, unknown>): Record<string, unknown> {
  const { jwt: _jwt, token: _token, ...rest } = enrollment;
  return rest;
}

function mayRead(req: FastifyRequest, owners: PermissionHolder[]): boolean {
  const caller = callerOf(req).identity;
  return isAdmin(caller) || owners.every((owner) => covers(caller, owner));
}

/** An enrollment record as the caller may see it (router enrollments are not an identity's: shown whole). */
export function enrollmentShownTo(q: Sql) {
  return async (req: FastifyRequest, item: Record<string, unknown>): Promise<Record<string, unknown>> => {
    if (typeof item.identityId !== 'string' || isAdmin(callerOf(req).identity)) return item;
    // The detail requires a token: an empty one.
    return mayRead(req, await identityRights(q, item.identityId)) ? item : { ...withoutSecrets(item), token: '' };
  };
}

/** An identity's read model as the caller may see it: its embedded enrollments lose their secrets likewise. */
export function identityShownTo(req: FastifyRequest, item: Record<string, unknown>): Record<string, unknown> {
  const enrollment = item.enrollment as Record<string, Record<string, unknown>> | undefined;
  if (!enrollment || Object.keys(enrollment).length === 0) return item;
  const owner: PermissionHolder = {
    isAdmin: item.isAdmin === true,
    isDefaultAdmin: item.isDefaultAdmin === true,
    permissions: Array.isArray(item.permissions) ? (item.permissions as string[]) : [],
  };
  if (mayRead(req, [owner])) return item;
  return { ...item, enrollment: Object.fromEntries(Object.entries(enrollment).map(([method, e]) => [method, withoutSecrets(e)])) };
}
