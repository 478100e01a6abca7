/**
 * Posture evaluation over the store: which service policies of an identity pass their posture checks for
 * one API session, used by session creation (auth.md §5.3: 409 INVALID_POSTURE, the refusal recorded as a
 * failed service request), by the services' `postureQueries` (§5.4), and by the enforcement that deletes
 * sessions whose service no longer has a passing policy (§5.2).
 */
import type { Sql, Store, Tx } from '../store/store.ts';
import { idSetCondition } from '../query/dialect.ts';
import { ApiError } from '../errors.ts';
import type { AccessService } from '../access/access.service.ts';
import type { PolicyType } from '../access/access-index.ts';
import type { Clock } from '../resources/entity-service.ts';
import { loadPostureData, type PostureData } from './posture-data.ts';
import {
  NO_TIMEOUT,
  evaluateCheck,
  failureOf,
  mfaLastEventAt,
  mfaSettings,
  mfaTimeoutRemaining,
  type PostureCheckDef,
} from './posture-check-eval.ts';

/** Upstream keeps the last 100 refused session requests per identity. */
export const MAX_FAILED_SERVICE_REQUESTS = 100;

const NO_CHECKS = 'no posture checks defined';

/** The entries shown when no posture check applies: one per permission. */
export function placeholderQueries(permissions: readonly string[] | null): Array<Record<string, unknown>> {
  return (permissions ?? []).map((perm) => ({
    isPassing: true,
    policyId: `dummy ${perm.toLowerCase()} policy: ${NO_CHECKS}`,
    policyType: perm,
    postureQueries: [],
  }));
}

export interface PostureEvaluatorDeps {
  store: Store;
  access: AccessService;
  clock: Clock;
}

interface PolicyResult {
  policyId: string;
  checks: PostureCheckDef[];
  failing: PostureCheckDef[];
}

function parseJson(text: string | null | undefined, fallback: Record<string, unknown> = {}): Record<string, unknown> {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return fallback;
  }
}

export function createPostureEvaluator(deps: PostureEvaluatorDeps) {
  const { store, access, clock } = deps;

  /** A loader of posture checks by id (read from `q`), caching for the duration of one evaluation. */
  function checkLoader(q: Sql = store): (id: string) => Promise<PostureCheckDef | undefined> {
    const cache = new Map<string, PostureCheckDef | undefined>();
    return async (id) => {
      if (cache.has(id)) return cache.get(id);
      const row = await q.get<Record<string, string>>('SELECT id, name, type_id, details, created_at, updated_at, tags FROM posture_checks WHERE id = ?', [id]);
      const def = row
        ? {
            id: row.id!,
            name: row.name!,
            typeId: row.type_id!,
            details: parseJson(row.details),
            createdAt: row.created_at!,
            updatedAt: row.updated_at!,
            tags: parseJson(row.tags),
          }
        : undefined;
      cache.set(id, def);
      return def;
    };
  }

  /** Whether any posture check exists (the access index holds every posture check, kept with the store). */
  function anyChecks(): boolean {
    return access.index.entityCount('postureCheck') > 0;
  }

  async function policyChecks(policyId: string, load: (id: string) => Promise<PostureCheckDef | undefined>): Promise<PostureCheckDef[]> {
    const out: PostureCheckDef[] = [];
    for (const id of [...access.index.membersOf(policyId, 'postureCheckRoles')].sort()) {
      const def = await load(id);
      if (def) out.push(def);
    }
    return out;
  }

  async function evaluatePolicies(
    policyIds: string[],
    data: PostureData,
    apiSessionId: string,
    load: (id: string) => Promise<PostureCheckDef | undefined>,
    now: number,
  ): Promise<PolicyResult[]> {
    const results: PolicyResult[] = [];
    for (const policyId of policyIds) {
      const checks = await policyChecks(policyId, load);
      results.push({ policyId, checks, failing: checks.filter((c) => !evaluateCheck(c, data, apiSessionId, now)) });
    }
    return results;
  }

  /**
   * §5.3: passes when no check exists anywhere, when no policy of the type links identity and service, or
   * when one linking policy passes all of its checks. `passing` lists the passing policies.
   */
  async function evaluateServiceRequest(
    identityId: string,
    apiSessionId: string,
    serviceId: string,
    type: PolicyType,
    ctx: { data?: PostureData; load?: (id: string) => Promise<PostureCheckDef | undefined> } = {},
  ): Promise<{ passed: boolean; passing: string[]; results: PolicyResult[]; data?: PostureData }> {
    if (!anyChecks()) return { passed: true, passing: [], results: [] };
    const linking = access.index.identityServices(identityId).linking(serviceId, type).sort();
    if (linking.length === 0) return { passed: true, passing: [], results: [] };
    const data = ctx.data ?? (await loadPostureData(store, identityId));
    const results = await evaluatePolicies(linking, data, apiSessionId, ctx.load ?? checkLoader(), clock.now().getTime());
    const passing = results.filter((r) => r.failing.length === 0).map((r) => r.policyId);
    return { passed: passing.length > 0, passing, results, data };
  }

  /** Stores a refused session request, keeping the newest 100 of the identity. */
  async function recordFailure(tx: Tx, identityId: string, entry: Record<string, unknown>): Promise<void> {
    await tx.run('INSERT INTO posture_failed_service_requests (identity_id, data) VALUES (?, ?)', [identityId, JSON.stringify(entry)]);
    await tx.run(
      `DELETE FROM posture_failed_service_requests WHERE identity_id = ? AND seq NOT IN
         (SELECT seq FROM posture_failed_service_requests WHERE identity_id = ? ORDER BY seq DESC LIMIT ${MAX_FAILED_SERVICE_REQUESTS})`,
      [identityId, identityId],
    );
  }

  /**
   * Session creation's posture rule: the passing policy ids (empty when posture does not apply), or 409
   * INVALID_POSTURE after recording the refusal as a failed service request.
   */
  async function assertSessionAllowed(identityId: string, apiSessionId: string, serviceId: string, type: PolicyType): Promise<string[]> {
    const load = checkLoader();
    const r = await evaluateServiceRequest(identityId, apiSessionId, serviceId, type, { load });
    if (r.passed) return r.passing;
    const now = clock.now();
    const data = r.data!;
    const serviceName = (await store.get<{ name: string }>('SELECT name FROM services WHERE id = ?', [serviceId]))?.name ?? '';
    const policyFailures: Array<Record<string, unknown>> = [];
    for (const p of r.results) {
      policyFailures.push({
        checks: p.failing.map((c) => failureOf(c, data, apiSessionId, now.getTime())),
        policyId: p.policyId,
        policyName: (await store.get<{ name: string }>('SELECT name FROM service_policies WHERE id = ?', [p.policyId]))?.name ?? '',
      });
    }
    const entry = {
      apiSessionId,
      policyFailures,
      serviceId,
      serviceName,
      sessionType: type,
      when: now.toISOString(),
    };
    await store.write((tx) => recordFailure(tx, identityId, entry));
    const causeData: Record<string, unknown> = {};
    for (const p of r.results) causeData[p.policyId] = p.failing.map((c) => ({ id: c.id, typeId: c.typeId, isPassing: false }));
    throw new ApiError('INVALID_POSTURE', {
      cause: { message: `Failed to pass posture checks for service policies: [${r.results.map((p) => p.policyId).join(' ')}]`, data: causeData },
    });
  }

  /** The refused session requests of an identity, oldest first. */
  async function failedServiceRequests(identityId: string): Promise<unknown[]> {
    const rows = await store.all<{ data: string }>('SELECT data FROM posture_failed_service_requests WHERE identity_id = ? ORDER BY seq', [identityId]);
    return rows.map((r) => JSON.parse(r.data) as unknown);
  }

  /**
   * Renders `postureQueries` for services of one caller: data and checks are loaded once per context.
   * Without an API session (management views) MFA checks are evaluated as not passed.
   */
  function queryContext(identityId: string, apiSessionId: string | undefined) {
    const checksExist = anyChecks();
    let data: Promise<PostureData> | undefined;
    const load = checkLoader();
    const now = clock.now();
    const nowMs = now.getTime();

    function query(check: PostureCheckDef, isPassing: boolean, d: PostureData): Record<string, unknown> {
      const q: Record<string, unknown> = {
        _links: { self: { href: `./posture-checks/${check.id}` } },
        createdAt: check.createdAt,
        id: check.id,
        tags: check.tags,
        updatedAt: check.updatedAt,
        isPassing,
        queryType: check.typeId,
        timeout: NO_TIMEOUT,
        timeoutRemaining: NO_TIMEOUT,
      };
      const ref = (p: unknown) => {
        const proc = (p ?? {}) as Record<string, unknown>;
        return { osType: proc.osType, path: proc.path };
      };
      if (check.typeId === 'PROCESS') q.process = ref(check.details.process);
      // Every query carries `processes`, null unless the check is PROCESS_MULTI (upstream's nil list).
      q.processes = check.typeId === 'PROCESS_MULTI' ? ((check.details.processes as unknown[]) ?? []).map(ref) : null;
      if (check.typeId === 'MFA') {
        const m = mfaSettings(check);
        const remaining = mfaTimeoutRemaining(m, d, apiSessionId, nowMs);
        q.timeout = m.timeoutSeconds;
        q.timeoutRemaining = remaining;
        if (remaining >= 0) q.timeoutAt = new Date(nowMs + remaining * 1000).toISOString();
        // As upstream, the prompts are sent only when set.
        if (m.promptOnWake) q.promptOnWake = true;
        if (m.promptOnUnlock) q.promptOnUnlock = true;
        const event = mfaLastEventAt(m, apiSessionId ? d.apiSessions.get(apiSessionId) : undefined);
        if (event && Date.parse(event) > Date.parse(check.updatedAt)) q.updatedAt = event;
      }
      return q;
    }

    const forService = async (serviceId: string, permissions: readonly string[] | null): Promise<unknown[]> => {
      const entries: Array<Record<string, unknown>> = [];
      if (checksExist) {
        const policies = access.index.identityServices(identityId).linking(serviceId).sort();
        if (policies.length > 0) data ??= loadPostureData(store, identityId);
        for (const policyId of policies) {
          const queries: unknown[] = [];
          let passing = true;
          const d = await data!;
          for (const check of await policyChecks(policyId, load)) {
            const ok = evaluateCheck(check, d, apiSessionId, nowMs);
            passing &&= ok;
            queries.push(query(check, ok, d));
          }
          entries.push({ isPassing: passing, policyId, policyType: access.index.policyType(policyId) ?? 'Dial', postureQueries: queries });
        }
      }
      if (entries.length > 0) return entries;
      return placeholderQueries(permissions);
    };
    // Without any posture check every answer is the placeholders of the permissions.
    return Object.assign(forService, { placeholdersOnly: !checksExist });
  }

  /**
   * Deletes the sessions (of the given identities, or all) whose service no longer has a passing policy
   * for their API session and type, and bumps the service-update mark of their identities. Returns the
   * identities that lost sessions.
   */
  async function enforce(tx: Tx, identityIds?: Iterable<string>): Promise<Set<string>> {
    const affected = new Set<string>();
    if (!anyChecks()) return affected;
    let sql = 'SELECT id, identity_id, api_session_id, service_id, session_type FROM sessions';
    let params: unknown[] = [];
    if (identityIds) {
      const cond = idSetCondition('identity_id', new Set(identityIds), tx.dialect);
      sql += ` WHERE ${cond.sql}`;
      params = cond.params;
    }
    const sessions = await tx.all<Record<string, string>>(`${sql} ORDER BY identity_id`, params);
    const load = checkLoader(tx);
    const dataOf = new Map<string, PostureData>();
    for (const s of sessions) {
      const identityId = s.identity_id!;
      let data = dataOf.get(identityId);
      if (!data) {
        data = await loadPostureData(tx, identityId);
        dataOf.set(identityId, data);
      }
      const r = await evaluateServiceRequest(identityId, s.api_session_id!, s.service_id!, s.session_type as PolicyType, { data, load });
      if (!r.passed) {
        await tx.run('DELETE FROM sessions WHERE id = ?', [s.id]);
        affected.add(identityId);
      }
    }
    if (affected.size > 0) await access.touch(tx, affected);
    return affected;
  }

  return { anyChecks, evaluateServiceRequest, assertSessionAllowed, failedServiceRequests, queryContext, enforce, checkLoader };
}

export type PostureEvaluator = ReturnType<typeof createPostureEvaluator>;
