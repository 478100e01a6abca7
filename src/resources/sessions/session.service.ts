/**
 * Sessions: the right of one API session to dial or bind one service, and the edge routers a client
 * may use for it. Creating one applies upstream's rules in order (service visible, requested
 * permission, posture, a shared edge router), stores the record (its internal token is its id),
 * reuses the existing session of the same (API session, service, type), and signs the session JWT
 * with the resolved id so `jti` always names a stored session.
 *
 * Sessions disappear with their API session, service or identity through the store's cascades, and
 * when posture enforcement finds their service without a passing policy (src/posture).
 */
import { apiSessionRef, entityRef } from '../entity-ref.ts';
import type { Sql, Store } from '../../store/store.ts';
import { compileListQuery, type ListParams } from '../../query/index.ts';
import { idSetCondition } from '../../query/dialect.ts';
import { filterableFields, type SymbolTable } from '../../query/symbols.ts';
import { ApiError, fieldError, notFound } from '../../errors.ts';
import { newCuid } from '../../ids.ts';
import { signJwt, type JwtSigningKey } from '../../pki/enrollment-jwt.ts';
import { createJwtKeyring } from '../../pki/jwt-keyring.ts';
import type { Membership } from '../../cluster/membership.ts';
import type { AccessService } from '../../access/access.service.ts';
import type { PolicyType } from '../../access/access-index.ts';
import type { Caller } from '../../http/caller.ts';
import { isAdmin } from '../../auth/permissions.ts';
import type { Clock, Page } from '../entity-service.ts';
import { sessionSymbols } from './session.resource.ts';
import { edgeRouterResource } from '../edge-routers/edge-router.resource.ts';
import { createEdgeRouterCatalog, type CatalogEdgeRouter } from './edge-router-catalog.ts';
import { createPostureEvaluator, type PostureEvaluator } from '../../posture/posture-evaluator.ts';

/** Upstream caps the edge routers of a session (and of a service's router list) at 25. */
export const MAX_SESSION_EDGE_ROUTERS = 25;

/** Routers never connect to this controller (no data plane), so their sync state is always unknown. */
const SYNC_STATUS_UNKNOWN = 'SYNC_UNKNOWN';

export interface SessionRecord {
  id: string;
  token: string;
  type: PolicyType;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  servicePolicies: string[];
  createdAt: string;
  updatedAt: string;
  tags: Record<string, unknown>;
}

export interface SessionServiceDeps {
  store: Store;
  access: AccessService;
  /** The controller key that signs session JWTs (the TLS server key, as upstream). */
  signer: JwtSigningKey;
  /** The network's controllers: a session JWT any live one signed is accepted. Absent: this controller alone. */
  membership?: Pick<Membership, 'known'>;
  /** `iss` of session JWTs: the controller's advertised base URL. */
  issuer: string;
  clock: Clock;
  /** Controller start: the floor of `lastChangeAt` in service-updates. */
  startedAt: Date;
  /** Posture evaluation of session requests (one over the same store is made when not given). */
  posture?: PostureEvaluator;
}

export interface ListPage<T> {
  items: T[];
  page: Page;
  filterableFields: string[];
}

function decode(row: Record<string, unknown>): SessionRecord {
  return {
    id: row.id as string,
    token: row.token as string,
    type: row.session_type as PolicyType,
    apiSessionId: row.api_session_id as string,
    identityId: row.identity_id as string,
    serviceId: row.service_id as string,
    servicePolicies: JSON.parse((row.service_policies as string | undefined) ?? '[]') as string[],
    createdAt: row.created_at as string,
    updatedAt: row.updated_at as string,
    tags: JSON.parse(row.tags as string) as Record<string, unknown>,
  };
}

function jsonObject(text: unknown): Record<string, string> {
  if (typeof text !== 'string' || text === '') return {};
  const parsed = JSON.parse(text) as unknown;
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, string>) : {};
}

/** A body member matched case-insensitively, as Go's JSON decoding matches keys (exact spelling first). */
function member(body: Record<string, unknown>, name: string): unknown {
  if (name in body) return body[name];
  const lower = name.toLowerCase();
  const key = Object.keys(body).find((k) => k.toLowerCase() === lower);
  return key === undefined ? undefined : body[key];
}

/** commonEdgeRouterProperties of a catalogue row (a `routers` row with its live connection state, when connected). */
export function edgeRouterProperties(row: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return {
    cost: row.cost as number,
    disabled: row.disabled === 1,
    hostname: (row.hostname as string | null) ?? '',
    isOnline: row.is_online === 1,
    name: row.name as string,
    noTraversal: row.no_traversal === 1,
    supportedProtocols: jsonObject(row.supported_protocols),
    syncStatus: (row.sync_status as string | null) ?? SYNC_STATUS_UNKNOWN,
  };
}

/** One page of `source` rows: the caller's filter, sort and paging within a fixed restriction. */
async function page(reader: Sql, source: string, symbols: SymbolTable, req: ListParams, restrict: { sql: string; params: unknown[] } | undefined) {
  const q = compileListQuery(symbols, req, reader.dialect);
  const { rows, totalCount } = await reader.page(source, {
    where: restrict ? `(${restrict.sql}) AND (${q.where})` : q.where,
    params: restrict ? [...restrict.params, ...q.params] : q.params,
    orderBy: q.orderBy,
    limit: q.limit,
    offset: q.offset,
  });
  return { rows, page: { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited }, filterableFields: filterableFields(symbols) };
}

export function createSessionService(deps: SessionServiceDeps) {
  const { store, access, signer, issuer, clock, startedAt } = deps;
  const posture = deps.posture ?? createPostureEvaluator({ store, access, clock });
  const keyring = createJwtKeyring(signer, () => deps.membership?.known() ?? []);

  async function find(id: string): Promise<SessionRecord | undefined> {
    const row = await store.get('SELECT * FROM sessions WHERE id = ?', [id]);
    return row ? decode(row) : undefined;
  }

  const edgeRouters = createEdgeRouterCatalog(store, edgeRouterProperties);

  /** Whether some edge router is granted to the identity (edge router policies) and the service (service edge router policies). */
  function anyEdgeRouterFor(identityId: string, serviceId: string): boolean {
    const forService = access.index.edgeRouterSet('service', serviceId);
    if (forService.size === 0) return false;
    const forIdentity = access.index.edgeRouterSet('identity', identityId);
    for (const id of forService) if (forIdentity.has(id)) return true;
    return false;
  }

  /** The edge routers the identity may use for the service (both policy kinds), by name, at most 25. */
  async function allowedEdgeRouters(identityId: string, serviceId: string): Promise<CatalogEdgeRouter[]> {
    const forService = access.index.edgeRouterSet('service', serviceId);
    if (forService.size === 0) return [];
    const forIdentity = access.index.edgeRouterSet('identity', identityId);
    const out: CatalogEdgeRouter[] = [];
    for (const r of (await edgeRouters.current()).byName) {
      if (!forService.has(r.id) || !forIdentity.has(r.id)) continue;
      out.push(r);
      if (out.length === MAX_SESSION_EDGE_ROUTERS) break;
    }
    return out;
  }

  /** The common properties of a catalogue entry, as a fresh object. */
  function propsOf(r: CatalogEdgeRouter): Record<string, unknown> {
    return { ...r.props, supportedProtocols: { ...(r.props.supportedProtocols as Record<string, string>) } };
  }

  /** sessionEdgeRouter entries of a session: the common properties plus `urls`. */
  async function sessionEdgeRouters(identityId: string, serviceId: string): Promise<Array<Record<string, unknown>>> {
    return (await allowedEdgeRouters(identityId, serviceId)).map((r) => ({ ...propsOf(r), urls: { ...(r.props.supportedProtocols as Record<string, string>) } }));
  }

  /**
   * JWTs signed for sessions, by session id. A repeated request for the same session within
   * `JWT_REUSE_MS` of the signature gets the same token back: its claims are fixed by the session record
   * (the id is never reused, so a memo can never name another session), it stays valid for a year, and
   * only `iat`/`exp` would differ by less than the window. Process-local: each worker signs on its own.
   */
  const signed = new Map<string, { jwt: string; at: number }>();
  const JWT_REUSE_MS = 60_000;
  const MAX_SIGNED = 10_000;

  async function sessionToken(s: SessionRecord, legacy: boolean): Promise<string> {
    const now = clock.now().getTime();
    const hit = signed.get(s.id);
    if (hit && now >= hit.at && now - hit.at < JWT_REUSE_MS) return hit.jwt;
    const jwt = await sessionJwt(s, legacy);
    if (signed.size >= MAX_SIGNED) {
      // Drop expired memos first; when every memo is fresh, the oldest ones.
      for (const [id, m] of signed) if (!(now >= m.at && now - m.at < JWT_REUSE_MS)) signed.delete(id);
      for (const id of signed.keys()) {
        if (signed.size < MAX_SIGNED) break;
        signed.delete(id);
      }
    }
    signed.delete(s.id);
    signed.set(s.id, { jwt, at: now });
    return jwt;
  }

  /**
   * The JWT of a session (claims of upstream's service access token). `z_leg` says whether its API session is a
   * zt-session: routers then also end its connections when told the session was removed.
   */
  function sessionJwt(s: SessionRecord, legacy: boolean): Promise<string> {
    const now = clock.now();
    const exp = new Date(now.getTime());
    exp.setUTCFullYear(exp.getUTCFullYear() + 1);
    return signJwt(
      {
        iss: issuer,
        sub: s.serviceId,
        aud: ['openziti'],
        iat: Math.floor(now.getTime() / 1000),
        jti: s.id,
        exp: Math.floor(exp.getTime() / 1000),
        z_asid: s.apiSessionId,
        z_iid: s.identityId,
        z_t: 's',
        z_st: s.type,
        z_leg: legacy,
      },
      signer,
    );
  }

  /** `POST /sessions`: the rules in upstream's order, then store (or reuse) and sign. */
  async function create(caller: Caller, body: Record<string, unknown>): Promise<{ record: SessionRecord; jwt: string }> {
    const identityId = caller.identity.id;
    const serviceIdValue = member(body, 'serviceId');
    const serviceId = typeof serviceIdValue === 'string' ? serviceIdValue : '';
    const index = access.index;
    const perms = index.identityServices(identityId).permissions(serviceId);
    if (!perms.dial && !perms.bind) throw notFound('service', serviceId);
    const typeValue = member(body, 'type');
    const type = (typeof typeValue === 'string' ? typeValue : 'Dial') as PolicyType | 'Invalid';
    const tags = member(body, 'tags');
    if ((type === 'Dial' && !perms.dial) || (type === 'Bind' && !perms.bind) || (type !== 'Dial' && type !== 'Bind')) {
      throw fieldError('ServiceId', 'service not found', serviceId);
    }
    const servicePolicies = await posture.assertSessionAllowed(identityId, caller.apiSession.id, serviceId, type);
    if (!anyEdgeRouterFor(identityId, serviceId)) throw new ApiError('NO_EDGE_ROUTERS_AVAILABLE');

    const existingSql = 'SELECT * FROM sessions WHERE api_session_id = ? AND service_id = ? AND session_type = ?';
    // The common repeat finds its session without taking the write lock; the write re-checks under it.
    const found = await store.get(existingSql, [caller.apiSession.id, serviceId, type]);
    if (found) {
      const record = decode(found);
      return { record, jwt: await sessionToken(record, caller.jwt === undefined) };
    }
    const record = await store.write(async (tx) => {
      const existing = await tx.get(existingSql, [
        caller.apiSession.id,
        serviceId,
        type,
      ]);
      if (existing) return decode(existing);
      const now = clock.now().toISOString();
      const id = newCuid();
      const fresh: SessionRecord = {
        id,
        token: id,
        type,
        apiSessionId: caller.apiSession.id,
        identityId,
        serviceId,
        servicePolicies,
        createdAt: now,
        updatedAt: now,
        tags: tags && typeof tags === 'object' ? (tags as Record<string, unknown>) : {},
      };
      await tx.run(
        `INSERT INTO sessions (id, token, session_type, api_session_id, identity_id, service_id, service_policies, created_at, updated_at, tags)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [id, id, type, fresh.apiSessionId, identityId, serviceId, JSON.stringify(servicePolicies), now, now, JSON.stringify(fresh.tags)],
      );
      return fresh;
    });
    return { record, jwt: await sessionToken(record, caller.jwt === undefined) };
  }

  /** The routers (ids, dialer's first) of the session's first live circuit; empty when it has none. */
  async function routePath(id: string): Promise<string[]> {
    await get(id);
    const path = await store.value<string>('SELECT path FROM circuits WHERE session_id = ? ORDER BY created_at LIMIT 1', [id]);
    return path ? (JSON.parse(path) as string[]) : [];
  }

  /** sessionManagementDetail; `token` is the JWT on create and the stored internal token otherwise. */
  async function present(s: SessionRecord, token: string = s.token): Promise<Record<string, unknown>> {
    const serviceName = (await store.get<{ name: string }>('SELECT name FROM services WHERE id = ?', [s.serviceId]))?.name ?? '';
    const policyName = 'SELECT name FROM service_policies WHERE id = ?';
    const servicePolicies: object[] = [];
    for (const policyId of s.servicePolicies) {
      const row = await store.get<{ name: string }>(policyName, [policyId]);
      if (row) servicePolicies.push(entityRef('service-policies', policyId, row.name));
    }
    return {
      _links: { self: { href: `./sessions/${s.id}` }, 'route-path': { href: `./sessions/${s.id}/route-path` } },
      createdAt: s.createdAt,
      id: s.id,
      tags: s.tags,
      updatedAt: s.updatedAt,
      apiSession: apiSessionRef(s.apiSessionId),
      apiSessionId: s.apiSessionId,
      edgeRouters: await sessionEdgeRouters(s.identityId, s.serviceId),
      identityId: s.identityId,
      service: entityRef('services', s.serviceId, serviceName),
      serviceId: s.serviceId,
      servicePolicies,
      token,
      type: s.type,
    };
  }

  /** Sessions, filtered and paged; `identityId` restricts them to one identity's API sessions. */
  async function list(req: ListParams, identityId?: string): Promise<ListPage<SessionRecord>> {
    const r = await page(store, 'sessions', sessionSymbols, req, identityId ? { sql: 'e.identity_id = ?', params: [identityId] } : undefined);
    return { items: r.rows.map(decode), page: r.page, filterableFields: r.filterableFields };
  }

  /** Client list: admins see every session, others those of their own identity. */
  function listForCaller(caller: Caller, req: ListParams): Promise<ListPage<SessionRecord>> {
    return list(req, isAdmin(caller.identity) ? undefined : caller.identity.id);
  }

  /** A session of the caller's own identity (admins too), else 404. */
  async function getOwn(caller: Caller, id: string): Promise<SessionRecord> {
    const s = await find(id);
    if (!s || s.identityId !== caller.identity.id) throw notFound('session', id);
    return s;
  }

  async function get(id: string): Promise<SessionRecord> {
    const s = await find(id);
    if (!s) throw notFound('session', id);
    return s;
  }

  async function remove(id: string): Promise<void> {
    await store.write(async (tx) => {
      if ((await tx.run('DELETE FROM sessions WHERE id = ?', [id])).changes === 0) throw notFound('session', id);
    });
  }

  async function removeOwn(caller: Caller, id: string): Promise<void> {
    await store.write(async (tx) => {
      const changed = (await tx.run('DELETE FROM sessions WHERE id = ? AND identity_id = ?', [id, caller.identity.id])).changes;
      if (changed === 0) throw notFound('session', id);
    });
  }

  /**
   * Checks a `session-token` header: a JWT a controller of the network signed, for a session (`z_t` "s") of this
   * service held by the caller's identity. Anything else is refused as not authorized. A token signed with this
   * controller's key must carry its issuer; one signed by another controller carries that controller's, which
   * its key already vouches for.
   */
  async function assertSessionToken(caller: Caller, serviceId: string, token: string): Promise<void> {
    let claims: Record<string, unknown>;
    let own: boolean;
    try {
      const verified = await keyring.verifyWithKey(token, { currentDate: clock.now() });
      claims = verified.claims;
      own = verified.key.own;
    } catch {
      throw new ApiError('UNAUTHORIZED');
    }
    const aud = claims.aud;
    const audOk = Array.isArray(aud) ? aud.includes('openziti') : aud === 'openziti';
    const issOk = own ? claims.iss === issuer : typeof claims.iss === 'string';
    if (claims.z_t !== 's' || !issOk || !audOk || claims.sub !== serviceId || claims.z_iid !== caller.identity.id) {
      throw new ApiError('UNAUTHORIZED');
    }
  }

  /** Client `GET /services/{id}/edge-routers`: routers shared by ERPs and SERPs (404 unless dial/bind). */
  async function serviceEdgeRouters(caller: Caller, serviceId: string, sessionToken: string | undefined): Promise<Array<Record<string, unknown>>> {
    if (sessionToken !== undefined) await assertSessionToken(caller, serviceId, sessionToken);
    const index = access.index;
    const perms = index.identityServices(caller.identity.id).permissions(serviceId);
    if (!perms.dial && !perms.bind) throw notFound('service', serviceId);
    return (await allowedEdgeRouters(caller.identity.id, serviceId)).map(propsOf);
  }

  /** Client `GET /current-identity/edge-routers`: verified edge routers (admins: all; others: by ERP). */
  async function currentIdentityEdgeRouters(caller: Caller, req: ListParams): Promise<ListPage<Record<string, unknown>>> {
    if (!req.filter && !req.sort) return defaultEdgeRouterPage(caller, req);
    const conditions = ['e.is_edge = 1', 'e.is_verified = 1'];
    const params: unknown[] = [];
    if (!isAdmin(caller.identity)) {
      const cond = idSetCondition('e.id', access.index.edgeRoutersOfIdentity(caller.identity.id), store.dialect);
      conditions.push(cond.sql);
      params.push(...cond.params);
    }
    const r = await page(store, 'routers', edgeRouterResource.symbols, req, { sql: conditions.join(' AND '), params });
    return { items: r.rows.map(currentIdentityEdgeRouter), page: r.page, filterableFields: r.filterableFields };
  }

  /** The default order (id) of `currentIdentityEdgeRouters`, paged from the edge router catalogue. */
  async function defaultEdgeRouterPage(caller: Caller, req: ListParams): Promise<ListPage<Record<string, unknown>>> {
    const q = compileListQuery(edgeRouterResource.symbols, req, store.dialect);
    const allowed = isAdmin(caller.identity) ? undefined : access.index.edgeRouterSet('identity', caller.identity.id);
    const items: Array<Record<string, unknown>> = [];
    let totalCount = 0;
    const end = q.limit < 0 ? Infinity : q.offset + q.limit;
    for (const r of (await edgeRouters.current()).byId) {
      if (!r.isVerified || (allowed && !allowed.has(r.id))) continue;
      if (totalCount >= q.offset && totalCount < end) items.push(currentIdentityEdgeRouter(r.row));
      totalCount++;
    }
    return { items, page: { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited }, filterableFields: filterableFields(edgeRouterResource.symbols) };
  }

  function currentIdentityEdgeRouter(row: Readonly<Record<string, unknown>>): Record<string, unknown> {
    return {
      _links: { self: { href: `./edge-routers/${row.id as string}` } },
      createdAt: row.created_at,
      id: row.id,
      tags: JSON.parse(row.tags as string) as Record<string, unknown>,
      updatedAt: row.updated_at,
      ...edgeRouterProperties(row),
    };
  }

  /**
   * `lastChangeAt` of service-updates: the identity's last service-change mark; without one, the API
   * session's creation or the controller start, whichever is later.
   */
  async function lastServiceChange(caller: Caller): Promise<string> {
    const mark = await access.lastChangeAt(caller.identity.id);
    if (mark) return mark;
    const created = Date.parse(caller.apiSession.createdAt);
    return new Date(Math.max(created, startedAt.getTime())).toISOString();
  }

  return {
    create,
    present,
    find,
    get,
    routePath,
    getOwn,
    list,
    listForCaller,
    remove,
    removeOwn,
    serviceEdgeRouters,
    currentIdentityEdgeRouters,
    lastServiceChange,
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
