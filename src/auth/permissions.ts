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

/**
 * Who may call an operation: declared once beside each route (a route can not be declared without one),
 * and the only input of the permission check. The values mirror upstream's route permission resolvers:
 * - `public`: no credentials at all;
 * - `partial`: a session, also one whose secondary factor (MFA) is still pending;
 * - `session`: any fully authenticated session, admin or not;
 * - `admin`: administrators only;
 * - `admin-read`: administrators and `admin_readonly` callers (reads of records no permission value covers);
 * - `R.action`: administrators, `admin_readonly` when the action is `read`, and holders of `R` or `R.action`.
 *   A list of another type's records below a record (e.g. a policy's services) names the listed type.
 */
export type Access = 'public' | 'partial' | 'session' | 'admin' | 'admin-read' | `${PermissionResource}.${Action}`;

/** Whether a fully or partially authenticated caller passes the operation's access rule. */
export function permits(access: Access, holder: PermissionHolder, isPartial: boolean): boolean {
  switch (access) {
    case 'public':
    case 'partial':
      return true;
    case 'session':
      return !isPartial;
    case 'admin':
      return !isPartial && isAdmin(holder);
    case 'admin-read':
      return !isPartial && (isAdmin(holder) || holder.permissions.includes('admin_readonly'));
    default: {
      if (isPartial) return false;
      const dot = access.lastIndexOf('.');
      return can(holder, access.slice(0, dot) as PermissionResource, access.slice(dot + 1) as Action);
    }
  }
}

/** The authentication an access rule needs before its permission check. */
export function authenticationOf(access: Access): 'public' | 'partial' | 'session' {
  return access === 'public' || access === 'partial' ? access : 'session';
}
