/**
 * First-start records: the identity types, the `default` auth policy, the built-in config types with their
 * fixed ids, the five posture check types, and the default admin identity with its password authenticator. Each step only creates what
 * is missing, so later starts change nothing (in particular a new --admin-password does not silently
 * reset an existing admin).
 */
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/store.ts';
import { newEntityId, newShortId } from '../ids.ts';
import { hashPassword } from '../auth/password-hash.ts';
import { builtinConfigTypes } from '../resources/config-types/builtin-config-types.ts';
import { defaultAuthPolicy } from '../resources/auth-policies/auth-policy.resource.ts';
import { builtinPostureCheckTypes } from '../resources/posture-check-types/builtin-posture-check-types.ts';

export interface AdminCredentials {
  username: string;
  /** Set only when this start created the admin with a generated password. */
  generatedPassword?: string;
  created: boolean;
}

async function seedLookupRecords(store: Store, now: string): Promise<void> {
  await store.write(async (tx) => {
    const type = 'INSERT INTO identity_types (id, name, created_at, updated_at, is_system) VALUES (?, ?, ?, ?, 1) ON CONFLICT DO NOTHING';
    for (const name of ['Default', 'Router']) await tx.run(type, [name, name, now, now]);
    await tx.run(
      `INSERT INTO auth_policies (id, name, primary_settings, secondary_settings, created_at, updated_at, is_system)
       VALUES (?, ?, ?, ?, ?, ?, 1) ON CONFLICT DO NOTHING`,
      [defaultAuthPolicy.id, defaultAuthPolicy.name, JSON.stringify(defaultAuthPolicy.primary), JSON.stringify(defaultAuthPolicy.secondary), now, now],
    );
    const configType = 'INSERT INTO config_types (id, name, schema, created_at, updated_at, is_system) VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT DO NOTHING';
    // A built-in type no one has changed since it was seeded (updated_at still equals created_at) takes the
    // current upstream schema, so data dirs seeded by an older release serve the same documents as new ones.
    const refreshSchema = 'UPDATE config_types SET schema = ? WHERE id = ? AND updated_at = created_at AND schema <> ?';
    for (const ct of builtinConfigTypes) {
      const schema = JSON.stringify(ct.schema);
      await tx.run(configType, [ct.id, ct.name, schema, now, now]);
      await tx.run(refreshSchema, [schema, ct.id, schema]);
    }
    const postureCheckType =
      'INSERT INTO posture_check_types (id, name, operating_systems, created_at, updated_at, is_system) VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT DO NOTHING';
    for (const t of builtinPostureCheckTypes) await tx.run(postureCheckType, [t.id, t.name, JSON.stringify(t.operatingSystems), now, now]);
  });
}

function generatePassword(): string {
  // 24 characters from a URL-safe alphabet: ~143 bits of entropy, within the 5-100 bound.
  return randomBytes(18).toString('base64url');
}

const findAdmin = 'SELECT id FROM identities WHERE is_default_admin = 1';

async function ensureDefaultAdmin(store: Store, username: string, password: string | undefined, now: string): Promise<AdminCredentials> {
  if (await store.get(findAdmin)) return { username, created: false };
  if (username.length < 4 || username.length > 100) throw new Error('the admin user name must be 4 to 100 characters');
  if (password !== undefined && (password.length < 5 || password.length > 100)) throw new Error('the admin password must be 5 to 100 characters');
  const generated = password === undefined ? generatePassword() : undefined;
  const hash = await hashPassword(password ?? generated!);
  // Looked for again under the write lock: another process starting on the same store may have made it meanwhile.
  const created = await store.write(async (tx) => {
    if (await tx.get(findAdmin)) return false;
    const identityId = newShortId();
    await tx.run(
      `INSERT INTO identities (id, name, type_id, is_admin, is_default_admin, auth_policy_id, created_at, updated_at)
       VALUES (?, ?, 'Default', 1, 1, 'default', ?, ?)`,
      [identityId, `Default Admin`, now, now],
    );
    await tx.run(
      `INSERT INTO authenticators (id, identity_id, method, username, password_hash, created_at, updated_at)
       VALUES (?, ?, 'updb', ?, ?, ?, ?)`,
      [newEntityId(), identityId, username, hash, now, now],
    );
    return true;
  });
  return created ? { username, generatedPassword: generated, created: true } : { username, created: false };
}

export async function bootstrapRecords(store: Store, admin: { username: string; password?: string }): Promise<AdminCredentials> {
  const now = new Date().toISOString();
  await seedLookupRecords(store, now);
  return ensureDefaultAdmin(store, admin.username, admin.password, now);
}
