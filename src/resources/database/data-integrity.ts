/**
 * The data-integrity scan (model.md §8.1): every invariant this store relies on that the engine does not enforce
 * by itself, plus the engine's own checks. Each step reads one state: the run (database-ops.ts) gives each step a
 * read snapshot in check mode and runs every step inside one write transaction in fix mode. The same on both
 * engines: what differs (their catalogs, SQLite's storage check) is read through the store (store.ts).
 *
 * What is checked:
 * - the engine's storage check (`store.integrityCheck()`: SQLite's `PRAGMA integrity_check`, file/index
 *   corruption; not fixable; PostgreSQL has no equivalent);
 * - every real foreign key the catalog declares (`store.foreignKeys()`): dangling references, which either engine
 *   can hold when written with enforcement off (SQLite's `foreign_keys` pragma, PostgreSQL's replica mode, a bulk
 *   load); fixed by deleting a row its parent owns (ON DELETE CASCADE) or clearing a nullable reference, else only
 *   reported;
 * - every `*_role_attributes` side table against its owner's `role_attributes` JSON column (fixed by rewriting
 *   the side rows from the JSON);
 * - policy role lists: readable JSON, valid role syntax, `#all` alone, `@id` naming an existing entity of the
 *   field's kind (fixed by dropping the entry, as an entity delete does) and `policy_roles` rows agreeing with
 *   the JSON columns, including rows of policies that no longer exist (fixed by rewriting/deleting rows);
 * - `services.configs` JSON against `service_configs` rows and existing configs, one config per type;
 * - identity service-config overrides whose config type is not the config's type;
 * - enrollments naming a CA that no longer exists; sessions whose identity differs from their API session's;
 *   posture checks of an unknown type; more than one default admin;
 * - the in-memory access index against a fresh index loaded from the store, answer by answer for every
 *   identity, service, edge router, posture check and policy (fixed by reloading the index and marking the
 *   identities whose answers changed), and sessions the store's policies no longer allow (fixed by deleting).
 */
import type { ForeignKey, Sql, Store, Tx } from '../../store/store.ts';
import { parseRoleRef } from '../../policy/role-ref.ts';
import { createAccessService, policyStores, type AccessService } from '../../access/access.service.ts';
import { policyRoleFields, roleFieldKind, type AccessIndex, type EntityKind, type PolicyKind, type RoleField } from '../../access/access-index.ts';
import type { Clock } from '../entity-service.ts';
import { postureCheckTypeIds } from '../posture-checks/posture-check.resource.ts';

export interface ScanContext {
  store: Store;
  /** Where the step reads: the write transaction in fix mode, a read snapshot in check mode. */
  q: Sql;
  /** Present in fix mode: the write transaction every repair runs in. */
  tx?: Tx;
  access: AccessService;
  clock: Clock;
  /** Records one finding; `fixable` findings are repaired in fix mode and reported as fixed. */
  report(description: string, fixable: boolean): void;
}

export interface ScanStep {
  name: string;
  run(ctx: ScanContext): Promise<void>;
}

type Row = Record<string, unknown>;

function all(q: Sql, sql: string, ...params: unknown[]): Promise<Row[]> {
  return q.all<Row>(sql, params);
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function sortedUnique(values: Iterable<string>): string[] {
  return [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A JSON column holding a list of strings; undefined when it is not one. */
function stringList(text: unknown): string[] | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  } catch {
    // not JSON: reported by the caller
  }
  return undefined;
}

function groupBy(rows: Row[], key: string, value: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const row of rows) {
    const k = String(row[key]);
    let set = out.get(k);
    if (!set) out.set(k, (set = new Set()));
    set.add(String(row[value]));
  }
  return out;
}

// ---- the engine's own checks -------------------------------------------------------------------------

const storageIntegrity: ScanStep = {
  name: 'storage integrity',
  async run(ctx) {
    for (const problem of await ctx.store.integrityCheck()) ctx.report(`database integrity check: ${problem}`, false);
  },
};

/** `c.a = p.x AND c.b = p.y …` over the columns of a key. */
function keyMatch(fk: ForeignKey): string {
  return fk.from.map((from, i) => `p.${quoteIdent(fk.to[i]!)} = c.${quoteIdent(from)}`).join(' AND ');
}

const foreignKeys: ScanStep = {
  name: 'foreign keys',
  async run(ctx) {
    for (const fk of await ctx.store.foreignKeys()) {
      const { table, parent } = fk;
      // A reference with a NULL column references nothing (MATCH SIMPLE, as both engines check it).
      const referencing = fk.from.map((from) => `c.${quoteIdent(from)} IS NOT NULL`).join(' AND ');
      const where = `${referencing} AND NOT EXISTS (SELECT 1 FROM ${quoteIdent(parent)} p WHERE ${keyMatch(fk)})`;
      if (fk.from.length !== 1 || fk.to.length !== 1) {
        // Composite keys are not used by this schema; report without a repair.
        if ((await ctx.q.value(`SELECT 1 FROM ${quoteIdent(table)} c WHERE ${where} LIMIT 1`)) !== undefined) {
          ctx.report(`${table} has rows whose reference to ${parent} points at a missing record`, false);
        }
        continue;
      }
      const from = fk.from[0]!;
      // A row the parent owns (ON DELETE CASCADE) goes, as it would have gone with its parent; a nullable
      // reference is cleared; any other row (e.g. an identity whose type is missing) is reported, not deleted.
      const repair = fk.onDelete === 'CASCADE' ? 'delete' : fk.nullable ? 'clear' : undefined;
      const values = (await ctx.q.column<unknown>(`SELECT DISTINCT c.${quoteIdent(from)} AS v FROM ${quoteIdent(table)} c WHERE ${where}`)).map((v) =>
        String(v),
      );
      values.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (const value of values) {
        let repaired = repair !== undefined;
        if (ctx.tx && repair === 'delete') await ctx.tx.run(`DELETE FROM ${quoteIdent(table)} WHERE ${quoteIdent(from)} = ?`, [value]);
        if (ctx.tx && repair === 'clear') {
          try {
            await ctx.tx.run(`UPDATE ${quoteIdent(table)} SET ${quoteIdent(from)} = NULL WHERE ${quoteIdent(from)} = ?`, [value]);
          } catch {
            // Clearing would break another constraint (e.g. a CHECK): leave the row and say so. (On PostgreSQL the
            // failed statement ends the transaction: the whole fix then rolls back and the run reports the error.
            // No nullable reference of this schema that is not ON DELETE CASCADE has such a constraint.)
            repaired = false;
          }
        }
        ctx.report(`${table}.${from} '${value}' references a missing ${parent} record`, repaired);
      }
    }
  },
};

// ---- role attributes: JSON column ↔ side table -------------------------------------------------------

interface AttributeTable {
  table: string;
  owner: string;
  ownerColumn: string;
  valueColumn: string;
}

/** Every `<x>_role_attributes` side table, its owner table (from its foreign key) and its columns. */
async function attributeTables(store: Store): Promise<AttributeTable[]> {
  // Each side table's first foreign key names its owner (the catalog lists keys by child table).
  const firstKeys = new Map<string, ForeignKey>();
  for (const fk of await store.foreignKeys()) {
    if (fk.table.endsWith('_role_attributes') && !firstKeys.has(fk.table)) firstKeys.set(fk.table, fk);
  }
  const out: AttributeTable[] = [];
  for (const name of sortedUnique(firstKeys.keys())) {
    const fk = firstKeys.get(name)!;
    if (fk.from.length !== 1) continue;
    const ownerColumn = fk.from[0]!;
    if (!(await store.columns(fk.parent)).includes('role_attributes')) continue;
    const valueColumn = (await store.columns(name)).find((c) => c !== ownerColumn);
    if (!valueColumn) continue;
    out.push({ table: name, owner: fk.parent, ownerColumn, valueColumn });
  }
  return out;
}

const roleAttributes: ScanStep = {
  name: 'role attributes',
  async run(ctx) {
    for (const t of await attributeTables(ctx.store)) {
      const side = groupBy(await all(ctx.q, `SELECT ${quoteIdent(t.ownerColumn)} AS o, ${quoteIdent(t.valueColumn)} AS v FROM ${quoteIdent(t.table)}`), 'o', 'v');
      const owners = await all(ctx.q, `SELECT id, role_attributes FROM ${quoteIdent(t.owner)}`);
      for (const owner of owners) {
        const id = String(owner.id);
        const actual = side.get(id) ?? new Set<string>();
        let expected = stringList(owner.role_attributes);
        let rewrite = false;
        if (!expected) {
          ctx.report(`${t.owner} ${id} has an unreadable role attribute list; it is rebuilt from ${t.table}`, true);
          expected = sortedUnique(actual);
          await ctx.tx?.run(`UPDATE ${quoteIdent(t.owner)} SET role_attributes = ? WHERE id = ?`, [JSON.stringify(expected), id]);
        }
        const want = new Set(expected);
        for (const a of want) {
          if (actual.has(a)) continue;
          ctx.report(`${t.owner} ${id} role attribute '${a}' is missing from ${t.table}`, true);
          rewrite = true;
        }
        for (const a of actual) {
          if (want.has(a)) continue;
          ctx.report(`${t.table} holds role attribute '${a}' for ${t.owner} ${id}, which its record does not list`, true);
          rewrite = true;
        }
        if (rewrite && ctx.tx) {
          await ctx.tx.run(`DELETE FROM ${quoteIdent(t.table)} WHERE ${quoteIdent(t.ownerColumn)} = ?`, [id]);
          const insert = `INSERT INTO ${quoteIdent(t.table)} (${quoteIdent(t.ownerColumn)}, ${quoteIdent(t.valueColumn)}) VALUES (?, ?) ON CONFLICT DO NOTHING`;
          for (const a of want) await ctx.tx.run(insert, [id, a]);
        }
      }
    }
  },
};

// ---- policies: role lists, @id references, policy_roles rows ------------------------------------------

/** Where the entities each role field selects live. */
const entityIdQueries: Record<EntityKind, string> = {
  identity: 'SELECT id FROM identities',
  service: 'SELECT id FROM services',
  edgeRouter: 'SELECT id FROM routers WHERE is_edge = 1',
  postureCheck: 'SELECT id FROM posture_checks',
};

async function entityIds(q: Sql, kind: EntityKind): Promise<Set<string>> {
  return new Set(await q.column<string>(entityIdQueries[kind]));
}

const policies: ScanStep = {
  name: 'policies',
  async run(ctx) {
    const ids: Record<EntityKind, Set<string>> = {
      identity: await entityIds(ctx.q, 'identity'),
      service: await entityIds(ctx.q, 'service'),
      edgeRouter: await entityIds(ctx.q, 'edgeRouter'),
      postureCheck: await entityIds(ctx.q, 'postureCheck'),
    };
    const roleRows = await all(ctx.q, 'SELECT policy_id, field, role FROM policy_roles');
    const rowsByPolicy = new Map<string, Row[]>();
    for (const row of roleRows) {
      const list = rowsByPolicy.get(String(row.policy_id)) ?? [];
      list.push(row);
      rowsByPolicy.set(String(row.policy_id), list);
    }
    const known = new Set<string>();

    for (const kind of Object.keys(policyStores) as PolicyKind[]) {
      const store = policyStores[kind];
      const fields = policyRoleFields[kind];
      const columns = fields.map((f) => store.columns[f]!);
      for (const policy of await all(ctx.q, `SELECT id, ${columns.join(', ')} FROM ${store.table}`)) {
        const id = String(policy.id);
        known.add(id);
        const stored = rowsByPolicy.get(id) ?? [];
        const expected = new Set<string>();
        for (const [i, field] of fields.entries()) {
          const column = columns[i]!;
          const fromRows = sortedUnique(stored.filter((r) => r.field === field).map((r) => String(r.role)));
          let roles = stringList(policy[column]);
          let changed = false;
          if (!roles) {
            ctx.report(`${store.table} ${id} has an unreadable ${field} list; it is rebuilt from policy_roles`, true);
            roles = fromRows;
            changed = true;
          }
          const kept: string[] = [];
          for (const role of roles) {
            const ref = parseRoleRef(role);
            if (!ref) {
              ctx.report(`${store.table} ${id} ${field} holds invalid role '${role}'`, true);
              changed = true;
            } else if (ref.kind === 'id' && !ids[roleFieldKind[field]].has(ref.id)) {
              ctx.report(`${store.table} ${id} ${field} references missing ${roleFieldKind[field]} '${ref.id}'`, true);
              changed = true;
            } else {
              kept.push(role);
            }
          }
          let normalized = sortedUnique(kept);
          if (normalized.includes('#all') && normalized.length > 1) {
            // The index already treats the list as #all; keeping #all alone changes nobody's access.
            ctx.report(`${store.table} ${id} ${field} combines #all with other roles`, true);
            normalized = ['#all'];
            changed = true;
          }
          if (changed && ctx.tx) await ctx.tx.run(`UPDATE ${store.table} SET ${column} = ? WHERE id = ?`, [JSON.stringify(normalized), id]);
          for (const role of changed && ctx.tx ? normalized : roles) expected.add(`${field}\u0000${role}`);
        }
        const actual = new Set(stored.map((r) => `${String(r.field)}\u0000${String(r.role)}`));
        let rewrite = false;
        for (const key of expected) {
          if (actual.has(key)) continue;
          const [field, role] = key.split('\u0000');
          ctx.report(`${store.table} ${id} ${field} role '${role}' is missing from policy_roles`, true);
          rewrite = true;
        }
        for (const key of actual) {
          if (expected.has(key)) continue;
          const [field, role] = key.split('\u0000');
          ctx.report(`policy_roles holds ${field} role '${role}' for ${store.table} ${id}, which the policy does not list`, true);
          rewrite = true;
        }
        if (rewrite && ctx.tx) {
          await ctx.tx.run('DELETE FROM policy_roles WHERE policy_id = ?', [id]);
          const insert = 'INSERT INTO policy_roles (policy_id, field, role) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
          for (const key of expected) {
            const [field, role] = key.split('\u0000');
            await ctx.tx.run(insert, [id, field, role]);
          }
        }
      }
    }

    for (const [policyId, rows] of rowsByPolicy) {
      if (known.has(policyId)) continue;
      ctx.report(`policy_roles holds ${rows.length} role row(s) of policy '${policyId}', which does not exist`, true);
      await ctx.tx?.run('DELETE FROM policy_roles WHERE policy_id = ?', [policyId]);
    }
  },
};

// ---- services.configs ↔ service_configs ----------------------------------------------------------------

const serviceConfigs: ScanStep = {
  name: 'service configs',
  async run(ctx) {
    const configType = new Map((await all(ctx.q, 'SELECT id, config_type_id FROM configs')).map((r) => [String(r.id), String(r.config_type_id)]));
    const rows = groupBy(await all(ctx.q, 'SELECT service_id, config_id FROM service_configs'), 'service_id', 'config_id');
    for (const service of await all(ctx.q, 'SELECT id, configs FROM services')) {
      const id = String(service.id);
      const actual = rows.get(id) ?? new Set<string>();
      let list = stringList(service.configs);
      let changed = false;
      if (!list) {
        ctx.report(`services ${id} has an unreadable configs list; it is rebuilt from service_configs`, true);
        list = sortedUnique(actual);
        changed = true;
      }
      const kept = list.filter((configId) => {
        if (configType.has(configId)) return true;
        ctx.report(`services ${id} configs references missing config '${configId}'`, true);
        changed = true;
        return false;
      });
      const byType = groupBy(kept.map((c) => ({ type: configType.get(c), id: c })), 'type', 'id');
      for (const [type, configs] of byType) {
        if (configs.size > 1) ctx.report(`services ${id} lists ${configs.size} configs of config type ${type}: ${[...configs].join(', ')}`, false);
      }
      const normalized = sortedUnique(kept);
      if (changed && ctx.tx) await ctx.tx.run('UPDATE services SET configs = ? WHERE id = ?', [JSON.stringify(normalized), id]);
      const want = new Set(changed && ctx.tx ? normalized : kept);
      let rewrite = false;
      for (const c of want) {
        if (actual.has(c)) continue;
        ctx.report(`services ${id} config '${c}' is missing from service_configs`, true);
        rewrite = true;
      }
      for (const c of actual) {
        if (want.has(c)) continue;
        ctx.report(`service_configs links config '${c}' to services ${id}, which does not list it`, true);
        rewrite = true;
      }
      if (rewrite && ctx.tx) {
        await ctx.tx.run('DELETE FROM service_configs WHERE service_id = ?', [id]);
        const insert = 'INSERT INTO service_configs (service_id, config_id) VALUES (?, ?) ON CONFLICT DO NOTHING';
        for (const c of want) await ctx.tx.run(insert, [id, c]);
      }
    }
  },
};

// ---- single-table references without a foreign key -------------------------------------------------------

const otherReferences: ScanStep = {
  name: 'other references',
  async run(ctx) {
    for (const r of await all(
      ctx.q,
      `SELECT o.identity_id, o.service_id, o.config_type_id, o.config_id, c.config_type_id AS actual
         FROM identity_service_configs o JOIN configs c ON c.id = o.config_id
        WHERE c.config_type_id <> o.config_type_id`,
    )) {
      ctx.report(
        `identity_service_configs of identity ${String(r.identity_id)} and service ${String(r.service_id)} files config ${String(r.config_id)} under config type ${String(r.config_type_id)}, but its type is ${String(r.actual)}`,
        true,
      );
      await ctx.tx?.run('DELETE FROM identity_service_configs WHERE identity_id = ? AND service_id = ? AND config_type_id = ?', [
        r.identity_id,
        r.service_id,
        r.config_type_id,
      ]);
    }
    for (const r of await all(ctx.q, 'SELECT e.id, e.ca_id FROM enrollments e WHERE e.ca_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cas c WHERE c.id = e.ca_id)')) {
      ctx.report(`enrollments ${String(r.id)} references missing CA '${String(r.ca_id)}'`, true);
      await ctx.tx?.run('DELETE FROM enrollments WHERE id = ?', [r.id]);
    }
    for (const r of await all(
      ctx.q,
      'SELECT s.id, s.identity_id, a.identity_id AS owner FROM sessions s JOIN api_sessions a ON a.id = s.api_session_id WHERE s.identity_id <> a.identity_id',
    )) {
      ctx.report(`sessions ${String(r.id)} belongs to identity ${String(r.identity_id)} but its API session to identity ${String(r.owner)}`, true);
      await ctx.tx?.run('DELETE FROM sessions WHERE id = ?', [r.id]);
    }
    // The known types are those a posture check may have (MFA included), not the type catalogue (which has no MFA).
    const known = postureCheckTypeIds.map(() => '?').join(', ');
    for (const r of await all(ctx.q, `SELECT p.id, p.type_id FROM posture_checks p WHERE p.type_id NOT IN (${known})`, ...postureCheckTypeIds)) {
      ctx.report(`posture_checks ${String(r.id)} has unknown posture check type '${String(r.type_id)}'`, false);
    }
    const admins = await all(ctx.q, 'SELECT id FROM identities WHERE is_default_admin = 1');
    if (admins.length > 1) ctx.report(`${admins.length} identities are marked as the default admin: ${admins.map((r) => String(r.id)).join(', ')}`, false);
  },
};

// ---- the access index against the store ----------------------------------------------------------------

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/**
 * Compares two indexes answer by answer. Returns what differs, per subject, and the identities whose answers
 * (directly or through the services they may use) differ.
 */
export async function compareIndexes(q: Sql, live: AccessIndex, fresh: AccessIndex): Promise<{ differences: string[]; identities: Set<string> }> {
  const differences: string[] = [];
  const identities = new Set<string>();
  const kinds: EntityKind[] = ['identity', 'service', 'edgeRouter', 'postureCheck'];
  for (const kind of kinds) {
    if (live.entityCount(kind) !== fresh.entityCount(kind)) {
      differences.push(`access index holds ${live.entityCount(kind)} ${kind} entities, the store ${fresh.entityCount(kind)}`);
    }
  }
  const entityAnswers: Record<EntityKind, Array<[string, (ix: AccessIndex, id: string) => ReadonlySet<string> | string[]]>> = {
    identity: [
      ['services it may dial', (ix, id) => ix.servicesOfIdentity(id, 'Dial')],
      ['services it may bind', (ix, id) => ix.servicesOfIdentity(id, 'Bind')],
      ['edge routers it may use', (ix, id) => ix.edgeRoutersOfIdentity(id)],
      ['policies it is a member of', (ix, id) => ix.policiesOf('identity', id)],
    ],
    service: [
      ['identities that may use it', (ix, id) => ix.identitiesOfService(id)],
      ['edge routers that may carry it', (ix, id) => ix.edgeRoutersOfService(id)],
      ['posture checks that apply to it', (ix, id) => ix.postureChecksOfService(id)],
      ['policies it is a member of', (ix, id) => ix.policiesOf('service', id)],
    ],
    edgeRouter: [['policies it is a member of', (ix, id) => ix.policiesOf('edgeRouter', id)]],
    postureCheck: [['policies it is a member of', (ix, id) => ix.policiesOf('postureCheck', id)]],
  };
  for (const kind of kinds) {
    for (const id of await entityIds(q, kind)) {
      if (live.hasEntity(kind, id) !== fresh.hasEntity(kind, id)) {
        differences.push(`access index ${live.hasEntity(kind, id) ? 'holds' : 'lacks'} ${kind} ${id}, the store ${fresh.hasEntity(kind, id) ? 'holds' : 'lacks'} it`);
        if (kind === 'identity') identities.add(id);
        if (kind === 'service') for (const i of [...live.identitiesOfService(id), ...fresh.identitiesOfService(id)]) identities.add(i);
        continue;
      }
      for (const [what, answer] of entityAnswers[kind]) {
        if (sameSet(new Set(answer(live, id)), new Set(answer(fresh, id)))) continue;
        differences.push(`access index answers differ from the store for ${kind} ${id}: ${what}`);
        if (kind === 'identity') identities.add(id);
        if (kind === 'service') for (const i of [...live.identitiesOfService(id), ...fresh.identitiesOfService(id)]) identities.add(i);
      }
    }
  }
  for (const kind of Object.keys(policyStores) as PolicyKind[]) {
    for (const row of await all(q, `SELECT id FROM ${policyStores[kind].table}`)) {
      const id = String(row.id);
      if (live.policyType(id) !== fresh.policyType(id)) differences.push(`access index answers differ from the store for ${kind} ${id}: its type`);
      for (const field of policyRoleFields[kind] as readonly RoleField[]) {
        const a = live.membersOf(id, field);
        const b = fresh.membersOf(id, field);
        if (sameSet(a, b)) continue;
        differences.push(`access index answers differ from the store for ${kind} ${id}: the ${field} it matches`);
        if (roleFieldKind[field] === 'identity') for (const i of [...a, ...b]) identities.add(i);
      }
    }
  }
  return { differences, identities };
}

const accessIndex: ScanStep = {
  name: 'access index',
  async run(ctx) {
    // Read from where the step reads: in fix mode, the repairs of the steps before.
    const fresh = createAccessService(ctx.store, ctx.clock);
    await fresh.load(ctx.q);
    const { differences, identities } = await compareIndexes(ctx.q, ctx.access.index, fresh.index);
    for (const d of differences) ctx.report(d, true);
    if (ctx.tx) {
      // Fix mode always reloads the live index from the repaired store, then marks whose answers changed (the
      // access service applies both at commit and drops them on rollback).
      const tx = ctx.tx;
      await ctx.access.reload(tx);
      await ctx.access.touch(tx, identities);
    }
    // Sessions the store's policies no longer allow (an access change ends them; none may survive one).
    const index = fresh.index;
    for (const s of await all(ctx.q, 'SELECT id, identity_id, service_id, session_type FROM sessions')) {
      const allowed = index.permissions(String(s.identity_id), String(s.service_id));
      if (s.session_type === 'Bind' ? allowed.bind : allowed.dial) continue;
      ctx.report(`sessions ${String(s.id)} lets identity ${String(s.identity_id)} ${String(s.session_type).toLowerCase()} service ${String(s.service_id)}, which no policy allows`, true);
      await ctx.tx?.run('DELETE FROM sessions WHERE id = ?', [s.id]);
    }
  },
};

/** The steps in run order: repairs of earlier steps feed the later ones (the access index comes last). */
export const scanSteps: readonly ScanStep[] = [
  storageIntegrity,
  foreignKeys,
  roleAttributes,
  policies,
  serviceConfigs,
  otherReferences,
  accessIndex,
];
