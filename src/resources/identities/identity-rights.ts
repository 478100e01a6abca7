/**
 * The identities an operation acts on, read for the rights check of `RouteSpec.actsOn` (see auth/rights.ts):
 * a non-admin may act only on identities whose rights it holds itself.
 */
import type { FastifyRequest } from 'fastify';
import type { Db } from '../../store/database.ts';
import { prepare } from '../../store/entity-table.ts';
import type { PermissionHolder } from '../../auth/permissions.ts';
import type { RouteSpec } from '../../http/route.ts';

interface RightsRow {
  is_admin: number;
  is_default_admin: number;
  permissions: string | null;
}

function holderOf(row: RightsRow): PermissionHolder {
  return { isAdmin: row.is_admin === 1, isDefaultAdmin: row.is_default_admin === 1, permissions: row.permissions ? (JSON.parse(row.permissions) as string[]) : [] };
}

/** The rights of an identity; none when there is no such identity. */
export function identityRights(db: Db, id: unknown): PermissionHolder[] {
  if (typeof id !== 'string') return [];
  const row = prepare(db, 'SELECT is_admin, is_default_admin, permissions FROM identities WHERE id = ?').get(id) as RightsRow | undefined;
  return row ? [holderOf(row)] : [];
}

/** The identities that log in under an auth policy and hold any right beyond a plain identity's. */
export function rightsUnderPolicy(db: Db, policyId: string): PermissionHolder[] {
  const rows = prepare(
    db,
    "SELECT is_admin, is_default_admin, permissions FROM identities WHERE auth_policy_id = ? AND (is_admin = 1 OR is_default_admin = 1 OR permissions NOT IN ('[]', ''))",
  ).all(policyId) as RightsRow[];
  return rows.map(holderOf);
}

const idParam = (req: FastifyRequest) => (req.params as { id?: string }).id;

/** `actsOn` for an operation on the identity named by the `id` path parameter (or another field of the request). */
export function onIdentity(db: Db, action: string, identityId: (req: FastifyRequest) => unknown = idParam): NonNullable<RouteSpec['actsOn']> {
  return { action, targets: (req) => identityRights(db, identityId(req)) };
}
