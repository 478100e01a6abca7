/**
 * Rights between identities: the rule that keeps a permission value from leading to more than it names.
 *
 * A caller that is not an admin may act on another identity (change it, enroll it, reset its MFA, change the
 * auth policy it logs in with, read its enrollment secrets) only when it holds every right that identity
 * holds (`covers`). Records that decide who can log in as whom — external JWT signers and third-party CAs —
 * carry the rights of whoever last set what they authenticate (`Rights`, stored as JSON); they log in only the
 * identities those rights cover. So no chain of permitted writes lets a non-admin act as, take over or weaken
 * an identity with rights it does not have.
 */
import { Type } from '@sinclair/typebox';
import { ApiError, errorCatalogue } from '../errors.ts';
import { isAdmin, permissionValues, type PermissionHolder } from './permissions.ts';

/** A stored snapshot of what a caller could do: an admin, or its permission values. */
export interface Rights {
  isAdmin: boolean;
  permissions: readonly string[];
}

/** Rights that cover only identities without any: what records written before rights were kept are given. */
/** How rights are stored on a record (a field kept out of the read model). */
export const RightsSchema = Type.Object({ isAdmin: Type.Boolean(), permissions: Type.Array(Type.String()) });

export const noRights: Rights = Object.freeze({ isAdmin: false, permissions: Object.freeze([]) as readonly string[] });

export function rightsOf(holder: PermissionHolder): Rights {
  if (isAdmin(holder)) return { isAdmin: true, permissions: [] };
  return { isAdmin: false, permissions: [...new Set(holder.permissions)].sort() };
}

/** Whether `holder` has the right a permission value grants, by holding it, a wider value, or all its parts. */
function holds(holder: PermissionHolder, value: string): boolean {
  const held = holder.permissions;
  if (held.includes(value)) return true;
  const dot = value.lastIndexOf('.');
  if (dot < 0) {
    // `R` is every `R.action` there is.
    const parts = permissionValues.filter((v) => v.startsWith(`${value}.`));
    return parts.length > 0 && parts.every((part) => holds(holder, part));
  }
  // `R.action` is part of `R`; `R.read` is part of admin_readonly's read-everything.
  return held.includes(value.slice(0, dot)) || (value.endsWith('.read') && held.includes('admin_readonly'));
}

/** Whether `holder` holds every right `target` holds (an admin covers everyone; only an admin covers an admin). */
export function covers(holder: PermissionHolder, target: PermissionHolder): boolean {
  if (isAdmin(holder)) return true;
  if (isAdmin(target)) return false;
  return target.permissions.every((value) => holds(holder, value));
}

/** The rights both hold: what a record keeps when a second party's rights also stand behind it. */
export function intersect(a: Rights, b: Rights): Rights {
  if (a.isAdmin) return rightsOf(b);
  if (b.isAdmin) return rightsOf(a);
  const both = [...a.permissions.filter((v) => holds(b, v)), ...b.permissions.filter((v) => holds(a, v))];
  return { isAdmin: false, permissions: [...new Set(both)].sort() };
}

/** Whether a record stamped with these rights may create identities (token and CA auto-enrollment do). */
export function mayCreateIdentities(rights: Rights): boolean {
  return rights.isAdmin || holds(rights, 'identity.create');
}

/** Reads stored rights; anything unreadable counts as no rights, so a damaged record can not log anyone in. */
export function parseRights(stored: unknown): Rights {
  let value = stored;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return noRights;
    }
  }
  if (!value || typeof value !== 'object') return noRights;
  const { isAdmin: admin, permissions } = value as Record<string, unknown>;
  if (admin === true) return { isAdmin: true, permissions: [] };
  if (!Array.isArray(permissions) || !permissions.every((p) => typeof p === 'string')) return noRights;
  return { isAdmin: false, permissions };
}

/** The refusal of an act on an identity the caller does not cover: upstream's answer to a non-admin (401). */
export function refusedOver(action: string, target: PermissionHolder): ApiError {
  const whom = isAdmin(target) ? 'admin identities' : 'identities holding rights the caller does not hold';
  return refused(`non-admins may not ${action} ${whom}`);
}

/** A 401 UNAUTHORIZED whose cause says why, as upstream refuses a non-admin in a handler. */
export function refused(reason: string): ApiError {
  return new ApiError('UNAUTHORIZED', { message: `${errorCatalogue.UNAUTHORIZED[1]}: ${reason}`, cause: { code: 'UNHANDLED', message: reason } });
}
