/**
 * First-start records: the identity types, the `default` auth policy, the built-in config types with their
 * fixed ids, the five posture check types, and the default admin identity with its password authenticator. Each step only creates what
 * is missing, so later starts change nothing (in particular a new --admin-password does not silently
 * reset an existing admin).
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import { withTransaction } from '../store/transaction.ts';
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

function seedLookupRecords(db: Db, now: string): void {
  withTransaction(db, (tx) => {
    const type = prepare(tx.db, 'INSERT OR IGNORE INTO identity_types (id, name, created_at, updated_at, is_system) VALUES (?, ?, ?, ?, 1)');
    for (const name of ['Default', 'Router']) type.run(name, name, now, now);
    prepare(
      tx.db,
      `INSERT OR IGNORE INTO auth_policies (id, name, primary_settings, secondary_settings, created_at, updated_at, is_system)
       VALUES (?, ?, ?, ?, ?, ?, 1)`,
    ).run(defaultAuthPolicy.id, defaultAuthPolicy.name, JSON.stringify(defaultAuthPolicy.primary), JSON.stringify(defaultAuthPolicy.secondary), now, now);
    const configType = prepare(tx.db, 'INSERT OR IGNORE INTO config_types (id, name, schema, created_at, updated_at, is_system) VALUES (?, ?, ?, ?, ?, 0)');
    // A built-in type no one has changed since it was seeded (updated_at still equals created_at) takes the
    // current upstream schema, so data dirs seeded by an older release serve the same documents as new ones.
    const refreshSchema = prepare(tx.db, 'UPDATE config_types SET schema = ? WHERE id = ? AND updated_at = created_at AND schema <> ?');
    for (const ct of builtinConfigTypes) {
      const schema = JSON.stringify(ct.schema);
      configType.run(ct.id, ct.name, schema, now, now);
      refreshSchema.run(schema, ct.id, schema);
    }
    const postureCheckType = prepare(
      tx.db,
      'INSERT OR IGNORE INTO posture_check_types (id, name, operating_systems, created_at, updated_at, is_system) VALUES (?, ?, ?, ?, ?, 1)',
    );
    for (const t of builtinPostureCheckTypes) postureCheckType.run(t.id, t.name, JSON.stringify(t.operatingSystems), now, now);
  });
}

function generatePassword(): string {
  // 24 characters from a URL-safe alphabet: ~143 bits of entropy, within the 5-100 bound.
  return randomBytes(18).toString('base64url');
}

async function ensureDefaultAdmin(db: Db, username: string, password: string | undefined, now: string): Promise<AdminCredentials> {
  const existing = prepare(db, 'SELECT id FROM identities WHERE is_default_admin = 1').get();
  if (existing) return { username, created: false };
  if (username.length < 4 || username.length > 100) throw new Error('the admin user name must be 4 to 100 characters');
  if (password !== undefined && (password.length < 5 || password.length > 100)) throw new Error('the admin password must be 5 to 100 characters');
  const generated = password === undefined ? generatePassword() : undefined;
  const hash = await hashPassword(password ?? generated!);
  withTransaction(db, (tx) => {
    const identityId = newShortId();
    prepare(
      tx.db,
      `INSERT INTO identities (id, name, type_id, is_admin, is_default_admin, auth_policy_id, created_at, updated_at)
       VALUES (?, ?, 'Default', 1, 1, 'default', ?, ?)`,
    ).run(identityId, `Default Admin`, now, now);
    prepare(
      tx.db,
      `INSERT INTO authenticators (id, identity_id, method, username, password_hash, created_at, updated_at)
       VALUES (?, ?, 'updb', ?, ?, ?, ?)`,
    ).run(newEntityId(), identityId, username, hash, now, now);
  });
  return { username, generatedPassword: generated, created: true };
}

export async function bootstrapRecords(db: Db, admin: { username: string; password?: string }): Promise<AdminCredentials> {
  const now = new Date().toISOString();
  seedLookupRecords(db, now);
  return ensureDefaultAdmin(db, admin.username, admin.password, now);
}

/** A stable id for this controller instance, created once. */
export function controllerInstanceId(db: Db): string {
  const row = prepare(db, "SELECT value FROM controller_facts WHERE key = 'instance-id'").get() as { value: string } | undefined;
  if (row) return row.value;
  const id = newShortId();
  prepare(db, "INSERT INTO controller_facts (key, value) VALUES ('instance-id', ?)").run(id);
  return id;
}
