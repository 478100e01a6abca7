/**
 * The access service ties the in-memory access index to the store. It loads the index at start and is
 * called, inside each write transaction, by every write that can change access: entity role attributes,
 * entity deletes (which also strip `@id` from policy role lists, as upstream), and policy writes. Each
 * call records the identities whose visible services changed (`identity_service_marks`, read by
 * service-updates) and ends their sessions for services they may no longer use. Should the transaction roll back, the index reloads itself from the store.
 *
 * With a change feed (src/cluster/change-feed.ts) every such write also appends "what to reload" rows in
 * its transaction, and rows written by other processes are applied here: the entity or policy is re-read
 * from the store and set into (or removed from) the index. Each write transaction first catches up with
 * the feed, so the index it computes affected identities with is the store's.
 *
 * It also owns the role-list rules every policy shares: syntax, `#all` alone, `@id` existence, the
 * sorted de-duplicated form that is stored, and the `*RolesDisplay` read model.
 */
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import type { Tx } from '../store/transaction.ts';
import { fieldError } from '../errors.ts';
import { idSetCondition } from '../query/dialect.ts';
import { parseRoleRef, type Semantic } from '../policy/role-ref.ts';
import type { Clock } from '../resources/entity-service.ts';
import { RELOAD_ALL, type ChangeFeed, type FeedEntry } from '../cluster/change-feed.ts';
import { AccessIndex, policyRoleFields, roleFieldKind, type AccessChange, type EntityKind, type PolicyInput, type PolicyKind, type RoleField } from './access-index.ts';

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

export function createAccessService(db: Db, clock: Clock, feed?: ChangeFeed) {
  let index = new AccessIndex();
  const reloadOnRollback = new WeakSet<Tx>();

  /** Rebuilds the index from the store; with a feed, continues reading it from the head seen first. */
  function load(): void {
    if (!feed) {
      index = readIndex();
      return;
    }
    const read = () => {
      const at = feed.head();
      index = readIndex();
      feed.loaded(at);
    };
    if (db.inTransaction) read();
    else db.transaction(read).deferred();
  }

  function readPolicy(kind: PolicyKind, id: string): PolicyInput | undefined {
    const store = policyStores[kind];
    const cols = Object.entries(store.columns) as Array<[RoleField, string]>;
    const typeCol = kind === 'servicePolicy' ? ', policy_type' : '';
    const row = prepare(db, `SELECT id, semantic${typeCol}, ${cols.map(([, c]) => c).join(', ')} FROM ${store.table} WHERE id = ?`).get(id) as
      | Record<string, string>
      | undefined;
    if (!row) return undefined;
    const roles: PolicyInput['roles'] = {};
    for (const [field, col] of cols) roles[field] = JSON.parse(row[col]!) as string[];
    return { id, kind, semantic: row.semantic as Semantic, type: row.policy_type as PolicyInput['type'], roles };
  }

  /** Role attributes of one entity as stored, or undefined when it does not exist (any more). */
  function readEntity(kind: EntityKind, id: string): string[] | undefined {
    const store = entityStores[kind];
    if (!prepare(db, store.name).get(id)) return undefined;
    return (prepare(db, `SELECT attribute FROM (${store.attributes}) AS a WHERE a.id = ?`).all(id) as Array<{ attribute: string }>).map((r) => r.attribute);
  }

  /**
   * Rows of the feed written by other processes: re-read each named record and apply it. A `set` that a
   * later row of the same batch names again is skipped (the later one re-reads the same current record);
   * removals are always applied, as they also strip `@id` roles from the index's policies.
   */
  function applyFeed(entries: readonly FeedEntry[]): void {
    if (entries.some((e) => e.op === 'reload' || e.kind === RELOAD_ALL)) {
      index = readIndex();
      return;
    }
    const last = new Map<string, number>();
    entries.forEach((e, i) => last.set(`${e.kind}\u0000${e.entityId}`, i));
    entries.forEach((e, i) => {
      if (e.op === 'set' && last.get(`${e.kind}\u0000${e.entityId}`) !== i) return;
      if (entityKinds.has(e.kind)) {
        const kind = e.kind as EntityKind;
        const attributes = e.op === 'set' ? readEntity(kind, e.entityId) : undefined;
        if (attributes) index.setEntity(kind, e.entityId, attributes);
        else index.removeEntity(kind, e.entityId);
      } else if (policyKinds.has(e.kind) || e.kind === 'policy') {
        const policy = e.op === 'set' && e.kind !== 'policy' ? readPolicy(e.kind as PolicyKind, e.entityId) : undefined;
        // Another process already recorded the affected identities: no need to work them out again.
        if (policy) index.loadPolicy(policy);
        else index.removePolicy(e.entityId);
      }
    });
  }

  feed?.subscribe({ apply: applyFeed, reload: load });

  function readIndex(): AccessIndex {
    const fresh = new AccessIndex();
    for (const kind of Object.keys(entityStores) as EntityKind[]) {
      const store = entityStores[kind];
      const attrs = new Map<string, string[]>();
      for (const row of db.prepare(store.ids).all() as Array<{ id: string }>) attrs.set(row.id, []);
      for (const row of db.prepare(store.attributes).all() as Array<{ id: string; attribute: string }>) attrs.get(row.id)?.push(row.attribute);
      for (const [id, list] of attrs) fresh.setEntity(kind, id, list);
    }
    for (const kind of Object.keys(policyStores) as PolicyKind[]) {
      const store = policyStores[kind];
      const cols = Object.entries(store.columns) as Array<[RoleField, string]>;
      const typeCol = kind === 'servicePolicy' ? ', policy_type' : '';
      const rows = db.prepare(`SELECT id, semantic${typeCol}, ${cols.map(([, c]) => c).join(', ')} FROM ${store.table}`).all() as Array<Record<string, string>>;
      for (const row of rows) {
        const roles: PolicyInput['roles'] = {};
        for (const [field, col] of cols) roles[field] = JSON.parse(row[col]!) as string[];
        fresh.loadPolicy({ id: row.id!, kind, semantic: row.semantic as Semantic, type: row.policy_type as PolicyInput['type'], roles });
      }
    }
    return fresh;
  }

  /** First access write of a transaction: catch up with other processes (under the write lock), arm the rollback reload. */
  function guard(tx: Tx): void {
    if (reloadOnRollback.has(tx)) return;
    reloadOnRollback.add(tx);
    feed?.catchUp();
    tx.onRollback(load);
  }

  function emit(tx: Tx, kind: string, id: string, op: 'set' | 'remove' | 'reload'): void {
    feed?.append(tx, kind, id, op);
  }

  /** Records that the services these identities see changed now. */
  function touch(tx: Tx, identityIds: Iterable<string>): void {
    const now = clock.now().toISOString();
    const upsert = prepare(
      tx.db,
      'INSERT INTO identity_service_marks (identity_id, changed_at) VALUES (?, ?) ON CONFLICT(identity_id) DO UPDATE SET changed_at = excluded.changed_at',
    );
    for (const id of identityIds) if (index.hasEntity('identity', id)) upsert.run(id, now);
  }

  /**
   * Marks the affected identities and ends their sessions for services they may no longer use with that
   * session's type (upstream's service policy enforcer does the same in the background).
   */
  function record(tx: Tx, change: AccessChange): AccessChange {
    if (change.affectedIdentities.size === 0) return change;
    touch(tx, change.affectedIdentities);
    const ids = idSetCondition('identity_id', change.affectedIdentities);
    const sessions = tx.db.prepare(`SELECT id, identity_id, service_id, session_type FROM sessions WHERE ${ids.sql}`).all(...ids.params) as Array<{
      id: string;
      identity_id: string;
      service_id: string;
      session_type: string;
    }>;
    const remove = prepare(tx.db, 'DELETE FROM sessions WHERE id = ?');
    for (const session of sessions) {
      const allowed = index.permissions(session.identity_id, session.service_id);
      if (!(session.session_type === 'Bind' ? allowed.bind : allowed.dial)) remove.run(session.id);
    }
    return change;
  }

  /** An entity was created or its role attributes changed. */
  function entityChanged(tx: Tx, kind: EntityKind, id: string, attributes: readonly string[]): AccessChange {
    guard(tx);
    emit(tx, kind, id, 'set');
    return record(tx, index.setEntity(kind, id, attributes));
  }

  /**
   * An entity is being deleted: strip `@id` from every policy role list that names it (rewriting the
   * stored policies, as upstream does) and drop it from the index.
   */
  function entityRemoved(tx: Tx, kind: EntityKind, id: string): AccessChange {
    guard(tx);
    emit(tx, kind, id, 'remove');
    const role = `@${id}`;
    const now = clock.now().toISOString();
    for (const policyKind of Object.keys(policyStores) as PolicyKind[]) {
      const store = policyStores[policyKind];
      for (const [field, column] of Object.entries(store.columns) as Array<[RoleField, string]>) {
        if (roleFieldKind[field] !== kind) continue;
        const rows = prepare(tx.db, `SELECT p.id, p.${column} AS roles FROM ${store.table} p JOIN policy_roles r ON r.policy_id = p.id WHERE r.field = ? AND r.role = ?`).all(
          field,
          role,
        ) as Array<{ id: string; roles: string }>;
        for (const row of rows) {
          const roles = (JSON.parse(row.roles) as string[]).filter((r) => r !== role);
          prepare(tx.db, `UPDATE ${store.table} SET ${column} = ?, updated_at = ? WHERE id = ?`).run(JSON.stringify(roles), now, row.id);
          prepare(tx.db, 'DELETE FROM policy_roles WHERE policy_id = ? AND field = ? AND role = ?').run(row.id, field, role);
          emit(tx, policyKind, row.id, 'set');
        }
      }
    }
    const change = index.removeEntity(kind, id);
    return record(tx, change);
  }

  /** A policy was created or updated (roles already validated and normalized). Writes its role rows. */
  function policyChanged(tx: Tx, input: PolicyInput): AccessChange {
    guard(tx);
    emit(tx, input.kind, input.id, 'set');
    prepare(tx.db, 'DELETE FROM policy_roles WHERE policy_id = ?').run(input.id);
    const insert = prepare(tx.db, 'INSERT INTO policy_roles (policy_id, field, role) VALUES (?, ?, ?)');
    for (const field of policyRoleFields[input.kind]) for (const r of input.roles[field] ?? []) insert.run(input.id, field, r);
    return record(tx, index.setPolicy(input));
  }

  function policyRemoved(tx: Tx, id: string): AccessChange {
    guard(tx);
    emit(tx, index.policyKind(id) ?? 'policy', id, 'remove');
    prepare(tx.db, 'DELETE FROM policy_roles WHERE policy_id = ?').run(id);
    return record(tx, index.removePolicy(id));
  }

  /** Rebuilds the index from the store inside a write that rewrote it wholesale, and tells the other processes to. */
  function reload(tx: Tx): void {
    guard(tx);
    emit(tx, RELOAD_ALL, '*', 'reload');
    index = readIndex();
  }

  /** Brings the index up to the newest change of other processes (before answering a request). */
  function catchUp(): void {
    feed?.catchUp();
  }

  /** Every identity that may use the service now (its record or configs changed). */
  function touchServiceUsers(tx: Tx, serviceId: string): void {
    touch(tx, index.identitiesOfService(serviceId));
  }

  /** When the identity's visible services last changed, if ever recorded. */
  function lastChangeAt(identityId: string): string | undefined {
    const row = prepare(db, 'SELECT changed_at FROM identity_service_marks WHERE identity_id = ?').get(identityId) as { changed_at: string } | undefined;
    return row?.changed_at;
  }

  /**
   * Validates a policy role list and returns its stored form (sorted, de-duplicated): every entry `#…`
   * or `@…`, `#all` alone, every `@id` an existing entity of the field's kind.
   */
  function validateRoles(tx: Tx, field: RoleField, roles: readonly string[] | null | undefined): string[] {
    const list = sortedUnique(roles ?? []);
    const bad = list.filter((r) => parseRoleRef(r) === undefined);
    if (bad.length > 0) throw fieldError(field, ROLE_PREFIX_REASON, bad);
    if (list.includes('#all') && list.length > 1) throw fieldError(field, 'if using #all, it should be the only role specified', list);
    const store = entityStores[roleFieldKind[field]];
    const missing = list.filter((r) => r.startsWith('@') && prepare(tx.db, store.name).get(r.slice(1)) === undefined).map((r) => r.slice(1));
    if (missing.length > 0) throw fieldError(field, `no ${store.word} found with the given ids`, missing);
    return list;
  }

  /** `{role, name}` per role: `#x` shows itself, `@id` shows `@<name>`, unknown ids are dropped. */
  function rolesDisplay(field: RoleField, roles: readonly string[] | null | undefined): RoleDisplay[] {
    const store = entityStores[roleFieldKind[field]];
    const out: RoleDisplay[] = [];
    for (const role of roles ?? []) {
      if (!role.startsWith('@')) {
        out.push({ role, name: role });
        continue;
      }
      const row = prepare(db, store.name).get(role.slice(1)) as { name: string } | undefined;
      if (row) out.push({ role, name: `@${row.name}` });
    }
    return out;
  }

  return {
    get index(): AccessIndex {
      return index;
    },
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

const membershipTablesOn = new WeakSet<Db>();

/**
 * Table-valued functions over the live access index, so filters can name what a policy matches: for a service
 * policy id, `pc_service_policy_identities` and `pc_service_policy_services` list the identities and services its
 * role lists match now (`anyOf(identities) = "<id>"` on the service policy list). Registered once per connection.
 */
export function registerMembershipTables(db: Db, access: AccessService): void {
  if (membershipTablesOn.has(db)) return;
  membershipTablesOn.add(db);
  const table = (name: string, field: RoleField) =>
    db.table(name, {
      columns: ['member'],
      parameters: ['policy_id'],
      rows: function* (policyId: unknown) {
        for (const member of access.index.membersOf(String(policyId), field)) yield { member };
      },
    });
  table('pc_service_policy_identities', 'identityRoles');
  table('pc_service_policy_services', 'serviceRoles');
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
