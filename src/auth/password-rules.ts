/**
 * The password rules of an identity's auth policy (`primary.updb`: minPasswordLength, requireSpecialChar,
 * requireNumberChar, requireMixedCase), enforced whenever a password is set: admin create/update of a updb
 * authenticator, the caller's own authenticator update, and updb enrollment. Upstream stores these rules
 * but enforces none of them; Portcullis enforces them on purpose. A violation is 400 COULD_NOT_VALIDATE
 * naming the `password` field and every rule it breaks; the password itself is never echoed.
 */
import type { Sql } from '../store/store.ts';
import { fieldError } from '../errors.ts';
import type { PrimarySettings } from './auth-policy-reader.ts';

/** The rules `password` breaks under `updb` (empty when it complies). */
export function passwordRuleViolations(password: string, updb: Partial<PrimarySettings['updb']>): string[] {
  const out: string[] = [];
  const min = updb.minPasswordLength ?? 5;
  if ([...password].length < min) out.push(`must be at least ${min} characters long`);
  if (updb.requireSpecialChar && !/[^\p{L}\p{N}]/u.test(password)) out.push('must contain a special character');
  if (updb.requireNumberChar && !/\p{N}/u.test(password)) out.push('must contain a number');
  if (updb.requireMixedCase && !(/\p{Ll}/u.test(password) && /\p{Lu}/u.test(password))) out.push('must contain both lower and upper case letters');
  return out;
}

/** Throws the field error when `password` breaks a rule of the auth policy of `identityId`. */
export async function assertPasswordRules(q: Sql, identityId: string, password: string): Promise<void> {
  const row = await q.get<{ primary_settings: string }>(
    `SELECT p.primary_settings FROM identities i JOIN auth_policies p ON p.id = COALESCE(NULLIF(i.auth_policy_id, ''), 'default') WHERE i.id = ?`,
    [identityId],
  );
  if (!row) return;
  const updb = (JSON.parse(row.primary_settings) as Partial<PrimarySettings>).updb ?? {};
  const violations = passwordRuleViolations(password, updb);
  if (violations.length > 0) {
    throw fieldError('password', `the password does not meet the auth policy: it ${violations.join(', ')}`, '');
  }
}
