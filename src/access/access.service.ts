/**
 * The access service ties the in-memory access index to the store. It loads the index at start and is
 * called, inside each write transaction, by every write that can change access: entity role attributes,
 * entity deletes (which also strip `@id` from policy role lists, as upstream), and policy writes. Each
 * call records the identities whose visible services changed (`identity_service_marks`, read by
 * service-updates) and ends their sessions for services they may no longer use.
 *
 * A transaction's changes reach the index only once it commits: until then they are kept as a list of
 * changes, and whenever the transaction consults the index (`withIndex`, and this service's own calls) they
 * are applied, consulted and undone again in one synchronous step, so no other request (they run between
 * the transaction's awaits) ever sees them. At commit (`tx.afterCommit`) they are applied for good; on
 * rollback (`tx.onRollback`) they are dropped and the index is as the store is.
 *
 * With a change feed (src/cluster/change-feed.ts) every such write also appends "what to reload" rows in
 * its transaction, and rows written by other processes are applied here: the entity or policy is re-read
 * from the store and set into (or removed from) the index. Each write transaction first catches up with
 * the feed, so the index it computes affected identities with is the store's.
 *
 * It also owns the role-list rules every policy shares: syntax, `#all` alone, `@id` existence, the
 * sorted de-duplicated form that is stored, and the `*RolesDisplay` read model.
 */
import type { Sql, Store, Tx } from '../store/store.ts';
import type { SqliteStore } from '../store/sqlite-store.ts';
import { fieldError } from '../errors.ts';
import { idSetCondition } from '../query/dialect.ts';
import { parseRoleRef, type Semantic } from '../policy/role-ref.ts';
import type { Clock } from '../resources/entity-service.ts';
import { RELOAD_ALL, type ChangeFeed, type FeedEntry } from '../cluster/change-feed.ts';
import {
  AccessIndex,
  policyRoleFields,
  roleFieldKind,
  type AccessChange,
  type EntityKind,
  type PolicyInput,
  type PolicyKind,
  type RoleField,
  type Undoable,
} from './access-index.ts';

interface EntityStore {
  /** Every entity id of the kind. */
  ids: string;
  /** (id, attribute) rows of the kind's role attributes. */
  attributes: string;
  /** Name of one entity, for `*RolesDisplay`. */
  name: string;
  /** Entity type word of upstream's "no <type> found with the given ids". */
  word: string;
}

const entityStores: Record<EntityKind, EntityStore> = {
  identity: {
    ids: 'SELECT id FROM identities',
    attributes: 'SELECT identity_id AS id, attribute FROM identity_role_attributes',
    name: 'SELECT name FROM identities WHERE id = ?',
    word: 'identities',
  },
  service: {
    ids: 'SELECT id FROM services',
    attributes: 'SELECT service_id AS id, attribute FROM service_role_attributes',
    name: 'SELECT name FROM services WHERE id = ?',
    word: 'services',
  },
  edgeRouter: {
    ids: 'SELECT id FROM routers WHERE is_edge = 1',
    attributes: 'SELECT a.router_id AS id, a.attribute FROM router_role_attributes a JOIN routers r ON r.id = a.router_id WHERE r.is_edge = 1',
    name: 'SELECT name FROM routers WHERE id = ? AND is_edge = 1',
    word: 'routers',
  },
  postureCheck: {
    ids: 'SELECT id FROM posture_checks',
    attributes: 'SELECT posture_check_id AS id, attribute FROM posture_check_role_attributes',
    name: 'SELECT name FROM posture_checks WHERE id = ?',
    word: 'postureChecks',
  },
};

/** Where each policy kind lives and which column holds each role list. */
export const policyStores: Record<PolicyKind, { table: string; columns: Partial<Record<RoleField, string>> }> = {
  servicePolicy: {
    table: 'service_policies',
    columns: { identityRoles: 'identity_roles', serviceRoles: 'service_roles', postureCheckRoles: 'posture_check_roles' },
  },
  edgeRouterPolicy: { table: 'edge_router_policies', columns: { identityRoles: 'identity_roles', edgeRouterRoles: 'edge_router_roles' } },
  serviceEdgeRouterPolicy: {
    table: 'service_edge_router_policies',
    columns: { serviceRoles: 'service_roles', edgeRouterRoles: 'edge_router_roles' },
  },
};

const ROLE_PREFIX_REASON = 'role entries must prefixed with # (to indicate role attributes) or @ (to indicate a name or id)';

export interface RoleDisplay {
  role: string;
  name: string;
}

function sortedUnique(values: readonly string[]): string[] {
  return [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

const policyKinds = new Set<string>(['servicePolicy', 'edgeRouterPolicy', 'serviceEdgeRouterPolicy']);
const entityKinds = new Set<string>(['identity', 'service', 'edgeRouter', 'postureCheck']);

/** One change of an open transaction, applied to the index as it is when called (`note`: work out the affected identities). */
type PendingChange = (note: boolean) => Undoable;

const NO_CHANGE = (): AccessChange => ({ affectedIdentities: new Set() });

async function readPolicy(q: Sql, kind: PolicyKind, id: string): Promise<PolicyInput | undefined> {
  const def = policyStores[kind];
  const cols = Object.entries(def.columns) as Array<[RoleField, string]>;
  const typeCol = kind === 'servicePolicy' ? ', policy_type' : '';
  const row = await q.get<Record<string, string>>(`SELECT id, semantic${typeCol}, ${cols.map(([, c]) => c).join(', ')} FROM ${def.table} WHERE id = ?`, [id]);
  if (!row) return undefined;
  const roles: PolicyInput['roles'] = {};
  for (const [field, col] of cols) roles[field] = JSON.parse(row[col]!) as string[];
  return { id, kind, semantic: row.semantic as Semantic, type: row.policy_type as PolicyInput['type'], roles };
}

/** Role attributes of one entity as stored, or undefined when it does not exist (any more). */
async function readEntity(q: Sql, kind: EntityKind, id: string): Promise<string[] | undefined> {
  const def = entityStores[kind];
  if (!(await q.get(def.name, [id]))) return undefined;
  return (await q.all<{ attribute: string }>(`SELECT attribute FROM (${def.attributes}) AS a WHERE a.id = ?`, [id])).map((r) => r.attribute);
}

async function readIndex(q: Sql): Promise<AccessIndex> {
  const fresh = new AccessIndex();
  for (const kind of Object.keys(entityStores) as EntityKind[]) {
    const def = entityStores[kind];
    const attrs = new Map<string, string[]>();
    for (const row of await q.all<{ id: string }>(def.ids)) attrs.set(row.id, []);
    for (const row of await q.all<{ id: string; attribute: string }>(def.attributes)) attrs.get(row.id)?.push(row.attribute);
    for (const [id, list] of attrs) fresh.setEntity(kind, id, list);
  }
  for (const kind of Object.keys(policyStores) as PolicyKind[]) {
    const def = policyStores[kind];
    const cols = Object.entries(def.columns) as Array<[RoleField, string]>;
    const typeCol = kind === 'servicePolicy' ? ', policy_type' : '';
    const rows = await q.all<Record<string, string>>(`SELECT id, semantic${typeCol}, ${cols.map(([, c]) => c).join(', ')} FROM ${def.table}`);
    for (const row of rows) {
      const roles: PolicyInput['roles'] = {};
      for (const [field, col] of cols) roles[field] = JSON.parse(row[col]!) as string[];
      fresh.loadPolicy({ id: row.id!, kind, semantic: row.semantic as Semantic, type: row.policy_type as PolicyInput['type'], roles });
    }
  }
  return fresh;
}

export function createAccessService(store: Store, clock: Clock, feed?: ChangeFeed) {
  /** The committed index: what every request sees. */
  let index = new AccessIndex();
  /** The changes of each open transaction that changed access, in order; applied for good at its commit. */
  const pending = new WeakMap<Tx, PendingChange[]>();
  /**
   * Reads of the store in progress (an index being built, feed rows being re-read): the changes of every
   * transaction of this process that commits meanwhile are added to each, to be applied again once the read is
   * in (its view of the store may predate them).
   */
  const watchers = new Set<PendingChange[]>();

  /**
   * Runs `fn` on the index as `q` sees it: the committed index plus the changes of `q` when it is an open
   * transaction. Synchronous on purpose: the changes are applied, `fn` runs, and they are undone before anything
   * else can run, so other requests only ever see the committed index. `fn` must not keep the index.
   */
  function withIndex<T>(q: Sql, fn: (index: AccessIndex) => T): T {
    const changes = pending.get(q as Tx);
    if (!changes || changes.length === 0) return fn(index);
    const undos: Array<() => void> = [];
    try {
      for (const apply of changes) undos.push(apply(false).undo);
      return fn(index);
    } finally {
      for (let i = undos.length - 1; i >= 0; i--) undos[i]!();
    }
  }

  /** Records one change of `tx` (applied for good at commit) and returns what it changes, seen from `tx`. */
  function change(tx: Tx, apply: PendingChange): AccessChange {
    const result = withIndex(tx, () => {
      const applied = apply(true);
      applied.undo();
      return applied.change;
    });
    pending.get(tx)!.push(apply);
    return result;
  }

  /** The committed transaction's changes become everybody's. */
  function publish(tx: Tx): void {
    const changes = pending.get(tx);
    pending.delete(tx);
    if (!changes || changes.length === 0) return;
    for (const apply of changes) apply(false);
    for (const missed of watchers) missed.push(...changes);
  }

  /**
   * Reads with `read`, then (synchronously) applies what was read with `use` and, after it, the changes of this
   * process's transactions that committed while reading: they are newer than what was read.
   */
  async function reading<T>(read: (watch: () => void) => Promise<T>, use: (value: T) => void): Promise<void> {
    const missed: PendingChange[] = [];
    try {
      const value = await read(() => watchers.add(missed));
      use(value);
      for (const apply of missed) apply(false);
    } finally {
      watchers.delete(missed);
    }
  }

  /** An index read from `q` (else from one snapshot of the store) becomes the committed index. */
  function install(q?: Sql): Promise<void> {
    return reading(
      (watch) => {
        const build = (s: Sql) => {
          watch();
          return readIndex(s);
        };
        return q ? build(q) : store.snapshot(build);
      },
      (fresh) => {
        index = fresh;
      },
    );
  }

  /**
   * Rebuilds the index from the store (from `q` when given, read as it is); with a feed, continues reading it
   * from the head seen before (or with) the index.
   */
  async function load(q?: Sql): Promise<void> {
    const at = feed ? await feed.head(q ?? store) : 0;
    await install(q);
    if (feed) await feed.loaded(at, q ?? store);
  }

  /**
   * Rows of the feed written by other processes: re-read each named record and apply it. A `set` that a
   * later row of the same batch names again is skipped (the later one re-reads the same current record);
   * removals are always applied, as they also strip `@id` roles from the index's policies. Records are read
   * in the feed's view `q`, except inside a write transaction (the guard's catch-up): then as committed, never
   * with the transaction's own changes. All are read before the index changes.
   */
  async function applyFeed(entries: readonly FeedEntry[], q: Sql): Promise<void> {
    const source = q.inWrite ? undefined : q;
    if (entries.some((e) => e.op === 'reload' || e.kind === RELOAD_ALL)) {
      await install(source);
      return;
    }
    const last = new Map<string, number>();
    entries.forEach((e, i) => last.set(`${e.kind}\u0000${e.entityId}`, i));
    await reading(
      async (watch) => {
        watch();
        const read = source ?? store;
        const steps: Array<() => void> = [];
        for (const [i, e] of entries.entries()) {
          if (e.op === 'set' && last.get(`${e.kind}\u0000${e.entityId}`) !== i) continue;
          if (entityKinds.has(e.kind)) {
            const kind = e.kind as EntityKind;
            const attributes = e.op === 'set' ? await readEntity(read, kind, e.entityId) : undefined;
            steps.push(() => {
              if (attributes) index.setEntity(kind, e.entityId, attributes);
              else index.removeEntity(kind, e.entityId);
            });
          } else if (policyKinds.has(e.kind) || e.kind === 'policy') {
            const policy = e.op === 'set' && e.kind !== 'policy' ? await readPolicy(read, e.kind as PolicyKind, e.entityId) : undefined;
            // Another process already recorded the affected identities: no need to work them out again.
            steps.push(() => {
              if (policy) index.loadPolicy(policy);
              else index.removePolicy(e.entityId);
            });
          }
        }
        return steps;
      },
      (steps) => {
        for (const step of steps) step();
      },
    );
  }

  // Outside a write the feed hands its snapshot (another snapshot must not be opened inside it); inside one, the
  // index is still read as committed.
  feed?.subscribe({ apply: (entries, q) => applyFeed(entries, q), reload: (q) => load(q.inWrite ? undefined : q) });

  /** First access write of a transaction: catch up with other processes (under the write lock), arm commit and rollback. */
  async function guard(tx: Tx): Promise<void> {
    if (pending.has(tx)) return;
    pending.set(tx, []);
    tx.afterCommit(() => publish(tx));
    tx.onRollback(() => pending.delete(tx));
    await feed?.catchUp(tx);
  }

  async function emit(tx: Tx, kind: string, id: string, op: 'set' | 'remove' | 'reload'): Promise<void> {
    await feed?.append(tx, kind, id, op);
  }

  /** Records that the services these identities see changed now (identities unknown to the index, as `tx` sees it, are skipped). */
  async function touch(tx: Tx, identityIds: Iterable<string>): Promise<void> {
    const now = clock.now().toISOString();
    const known = withIndex(tx, (ix) => [...identityIds].filter((id) => ix.hasEntity('identity', id)));
    for (const id of known) {
      await tx.run(
        'INSERT INTO identity_service_marks (identity_id, changed_at) VALUES (?, ?) ON CONFLICT(identity_id) DO UPDATE SET changed_at = excluded.changed_at',
        [id, now],
      );
    }
  }

  /**
   * Marks the affected identities and ends their sessions for services they may no longer use with that
   * session's type (upstream's service policy enforcer does the same in the background).
   */
  async function record(tx: Tx, change: AccessChange): Promise<AccessChange> {
    if (change.affectedIdentities.size === 0) return change;
    await touch(tx, change.affectedIdentities);
    const ids = idSetCondition('identity_id', change.affectedIdentities, tx.dialect);
    const sessions = await tx.all<{ id: string; identity_id: string; service_id: string; session_type: string }>(
      `SELECT id, identity_id, service_id, session_type FROM sessions WHERE ${ids.sql}`,
      ids.params,
    );
    const ended = withIndex(tx, (ix) =>
      sessions.filter((session) => {
        const allowed = ix.permissions(session.identity_id, session.service_id);
        return !(session.session_type === 'Bind' ? allowed.bind : allowed.dial);
      }),
    );
    for (const session of ended) await tx.run('DELETE FROM sessions WHERE id = ?', [session.id]);
    return change;
  }

  /** An entity was created or its role attributes changed. */
  async function entityChanged(tx: Tx, kind: EntityKind, id: string, attributes: readonly string[]): Promise<AccessChange> {
    await guard(tx);
    await emit(tx, kind, id, 'set');
    const list = [...attributes];
    return record(tx, change(tx, (note) => index.setEntityUndoable(kind, id, list, note)));
  }

  /**
   * An entity is being deleted: strip `@id` from every policy role list that names it (rewriting the
   * stored policies, as upstream does) and drop it from the index.
   */
  async function entityRemoved(tx: Tx, kind: EntityKind, id: string): Promise<AccessChange> {
    await guard(tx);
    await emit(tx, kind, id, 'remove');
    const role = `@${id}`;
    const now = clock.now().toISOString();
    for (const policyKind of Object.keys(policyStores) as PolicyKind[]) {
      const def = policyStores[policyKind];
      for (const [field, column] of Object.entries(def.columns) as Array<[RoleField, string]>) {
        if (roleFieldKind[field] !== kind) continue;
        const rows = await tx.all<{ id: string; roles: string }>(
          `SELECT p.id, p.${column} AS roles FROM ${def.table} p JOIN policy_roles r ON r.policy_id = p.id WHERE r.field = ? AND r.role = ?`,
          [field, role],
        );
        for (const row of rows) {
          const roles = (JSON.parse(row.roles) as string[]).filter((r) => r !== role);
          await tx.run(`UPDATE ${def.table} SET ${column} = ?, updated_at = ? WHERE id = ?`, [JSON.stringify(roles), now, row.id]);
          await tx.run('DELETE FROM policy_roles WHERE policy_id = ? AND field = ? AND role = ?', [row.id, field, role]);
          await emit(tx, policyKind, row.id, 'set');
        }
      }
    }
    return record(tx, change(tx, (note) => index.removeEntityUndoable(kind, id, note)));
  }

  /** A policy was created or updated (roles already validated and normalized). Writes its role rows. */
  async function policyChanged(tx: Tx, input: PolicyInput): Promise<AccessChange> {
    await guard(tx);
    await emit(tx, input.kind, input.id, 'set');
    await tx.run('DELETE FROM policy_roles WHERE policy_id = ?', [input.id]);
    for (const field of policyRoleFields[input.kind]) {
      for (const r of input.roles[field] ?? []) await tx.run('INSERT INTO policy_roles (policy_id, field, role) VALUES (?, ?, ?)', [input.id, field, r]);
    }
    const policy: PolicyInput = { ...input, roles: { ...input.roles } };
    return record(tx, change(tx, (note) => index.setPolicyUndoable(policy, note)));
  }

  async function policyRemoved(tx: Tx, id: string): Promise<AccessChange> {
    await guard(tx);
    await emit(tx, withIndex(tx, (ix) => ix.policyKind(id)) ?? 'policy', id, 'remove');
    await tx.run('DELETE FROM policy_roles WHERE policy_id = ?', [id]);
    return record(tx, change(tx, (note) => index.removePolicyUndoable(id, note)));
  }

  /** Rebuilds the index from the store inside a write that rewrote it wholesale (as of commit), and tells the other processes to. */
  async function reload(tx: Tx): Promise<void> {
    await guard(tx);
    await emit(tx, RELOAD_ALL, '*', 'reload');
    const fresh = await readIndex(tx);
    change(tx, () => {
      const before = index;
      index = fresh;
      return {
        change: NO_CHANGE(),
        undo: () => {
          index = before;
        },
      };
    });
  }

  /**
   * Brings the index up to the newest change of other processes (before answering a request). False without a
   * promise when there is nothing to read (see the feed's `catchUp`).
   */
  function catchUp(): Promise<boolean> | false {
    return feed ? feed.catchUp() : false;
  }

  /** Every identity that may use the service now, as `tx` sees it (its record or configs changed). */
  async function touchServiceUsers(tx: Tx, serviceId: string): Promise<void> {
    await touch(tx, withIndex(tx, (ix) => ix.identitiesOfService(serviceId)));
  }

  /** Marks read since the store's commit mark last moved (service-updates is asked by every SDK, often). */
  const knownMarks = new Map<string, string | undefined>();
  let knownAt: unknown;
  const MAX_KNOWN_MARKS = 100_000;

  /** When the identity's visible services last changed, if ever recorded. */
  async function lastChangeAt(identityId: string): Promise<string | undefined> {
    const read = async () =>
      (await store.get<{ changed_at: string }>('SELECT changed_at FROM identity_service_marks WHERE identity_id = ?', [identityId]))?.changed_at;
    if (!store.commitMark) return read();
    const at = store.commitMark();
    if (at !== knownAt) {
      knownMarks.clear();
      knownAt = at;
    }
    if (knownMarks.has(identityId)) return knownMarks.get(identityId);
    const value = await read();
    // Kept only when nobody committed meanwhile: the value is then the one the mark names.
    if (store.commitMark() === at) {
      if (knownMarks.size >= MAX_KNOWN_MARKS) knownMarks.clear();
      knownMarks.set(identityId, value);
    }
    return value;
  }

  /**
   * Validates a policy role list and returns its stored form (sorted, de-duplicated): every entry `#…`
   * or `@…`, `#all` alone, every `@id` an existing entity of the field's kind.
   */
  async function validateRoles(q: Sql, field: RoleField, roles: readonly string[] | null | undefined): Promise<string[]> {
    const list = sortedUnique(roles ?? []);
    const bad = list.filter((r) => parseRoleRef(r) === undefined);
    if (bad.length > 0) throw fieldError(field, ROLE_PREFIX_REASON, bad);
    if (list.includes('#all') && list.length > 1) throw fieldError(field, 'if using #all, it should be the only role specified', list);
    const def = entityStores[roleFieldKind[field]];
    const missing: string[] = [];
    for (const r of list) if (r.startsWith('@') && (await q.get(def.name, [r.slice(1)])) === undefined) missing.push(r.slice(1));
    if (missing.length > 0) throw fieldError(field, `no ${def.word} found with the given ids`, missing);
    return list;
  }

  /** `{role, name}` per role: `#x` shows itself, `@id` shows `@<name>`, unknown ids are dropped. */
  async function rolesDisplay(field: RoleField, roles: readonly string[] | null | undefined): Promise<RoleDisplay[]> {
    const def = entityStores[roleFieldKind[field]];
    const out: RoleDisplay[] = [];
    for (const role of roles ?? []) {
      if (!role.startsWith('@')) {
        out.push({ role, name: role });
        continue;
      }
      const row = await store.get<{ name: string }>(def.name, [role.slice(1)]);
      if (row) out.push({ role, name: `@${row.name}` });
    }
    return out;
  }

  return {
    /** The committed index (a transaction's own changes: `withIndex`). */
    get index(): AccessIndex {
      return index;
    },
    withIndex,
    load,
    reload,
    catchUp,
    entityChanged,
    entityRemoved,
    policyChanged,
    policyRemoved,
    touch,
    touchServiceUsers,
    lastChangeAt,
    validateRoles,
    rolesDisplay,
  };
}

const membershipTablesOn = new WeakSet<object>();

/**
 * Table-valued functions over the live (committed) access index, so filters can name what a policy matches: for
 * a service policy id, `pc_service_policy_identities` and `pc_service_policy_services` list the identities and
 * services its role lists match now (`anyOf(identities) = "<id>"` on the service policy list). Registered once
 * per connection, on both connections of the embedded store. SQLite only: a PostgreSQL store has no such
 * functions (see the report of the store conversion).
 */
export function registerMembershipTables(store: Store, access: AccessService): void {
  if (store.kind !== 'sqlite') return;
  const { db, reader } = store as SqliteStore;
  for (const connection of new Set([db, reader])) {
    if (membershipTablesOn.has(connection)) continue;
    membershipTablesOn.add(connection);
    const table = (name: string, field: RoleField) =>
      connection.table(name, {
        columns: ['member'],
        parameters: ['policy_id'],
        rows: function* (policyId: unknown) {
          for (const member of access.index.membersOf(String(policyId), field)) yield { member };
        },
      });
    table('pc_service_policy_identities', 'identityRoles');
    table('pc_service_policy_services', 'serviceRoles');
  }
}

/**
 * Entity-side role attributes (identities, services, edge routers): a set, stored sorted; no entry may
 * start with `#` or `@` (posture checks skip this check, as upstream).
 */
export function normalizeRoleAttributes(values: readonly string[] | null | undefined, options: { checkPrefix: boolean }): string[] {
  const list = sortedUnique(values ?? []);
  if (options.checkPrefix) {
    for (const prefix of ['#', '@']) {
      const bad = list.filter((v) => v.startsWith(prefix));
      if (bad.length > 0) throw fieldError('roleAttributes', `role attributes may not be prefixed with ${prefix}`, bad);
    }
  }
  return list;
}

export type AccessService = ReturnType<typeof createAccessService>;
