/**
 * The identities an operation acts on, read for the rights check of `RouteSpec.actsOn` (see auth/rights.ts):
 * a non-admin may act only on identities whose rights it holds itself.
 */
import type { FastifyRequest } from 'fastify';
import type { Sql } from '../../store/store.ts';
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
export async function identityRights(q: Sql, id: unknown): Promise<PermissionHolder[]> {
  if (typeof id !== 'string') return [];
  const row = await q.get<RightsRow>('SELECT is_admin, is_default_admin, permissions FROM identities WHERE id = ?', [id]);
  return row ? [holderOf(row)] : [];
}

/** The identities that log in under an auth policy and hold any right beyond a plain identity's. */
export async function rightsUnderPolicy(q: Sql, policyId: string): Promise<PermissionHolder[]> {
  // The JSON column read as text (a no-op on SQLite), so both engines compare it with the same literals.
  const rows = await q.all<RightsRow>(
    "SELECT is_admin, is_default_admin, permissions FROM identities WHERE auth_policy_id = ? AND (is_admin = 1 OR is_default_admin = 1 OR CAST(permissions AS TEXT) NOT IN ('[]', ''))",
    [policyId],
  );
  return rows.map(holderOf);
}

const idParam = (req: FastifyRequest) => (req.params as { id?: string }).id;

/** `actsOn` for an operation on the identity named by the `id` path parameter (or another field of the request). */
export function onIdentity(q: Sql, action: string, identityId: (req: FastifyRequest) => unknown = idParam): NonNullable<RouteSpec['actsOn']> {
  return { action, targets: (req) => identityRights(q, identityId(req)) };
}
