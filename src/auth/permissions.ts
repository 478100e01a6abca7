/**
 * The permission vocabulary (seeds §2.2) and the one function that decides whether a caller may perform
 * an action on a resource: admins may do everything; `admin_readonly` may read everything; `R` grants
 * every action on resource R and `R.<action>` one action; `ops` and `ops.read|update|delete` cover the
 * operational endpoints (API sessions, sessions, database).
 */
export const permissionResources = [
  'auth-policy',
  'ca',
  'config',
  'config-type',
  'edge-router-policy',
  'enrollment',
  'external-jwt-signer',
  'identity',
  'posture-check',
  'router',
  'service',
  'service-edge-router-policy',
  'service-policy',
  'terminator',
] as const;

export type PermissionResource = (typeof permissionResources)[number] | 'ops';
export type Action = 'read' | 'create' | 'update' | 'delete';

export const permissionValues: readonly string[] = [
  'admin_readonly',
  ...permissionResources.flatMap((r) => [r, `${r}.read`, `${r}.create`, `${r}.update`, `${r}.delete`]),
  'ops',
  'ops.read',
  'ops.update',
  'ops.delete',
];

export interface PermissionHolder {
  isAdmin: boolean;
  isDefaultAdmin?: boolean;
  permissions: readonly string[];
}

export function isAdmin(holder: PermissionHolder): boolean {
  return holder.isAdmin || holder.isDefaultAdmin === true;
}

export function can(holder: PermissionHolder, resource: PermissionResource, action: Action): boolean {
  if (isAdmin(holder)) return true;
  const p = holder.permissions;
  if (action === 'read' && p.includes('admin_readonly')) return true;
  return p.includes(resource) || p.includes(`${resource}.${action}`);
}
