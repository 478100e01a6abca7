/**
 * Posture responses (auth.md §5.2): validates and stores what clients report (OS, MAC, domain and
 * processes per identity; endpoint state per API session), then bumps the identity's service-update mark
 * and deletes the identity's sessions whose service no longer has a passing policy. Also the management
 * views of posture data and refused session requests (§5.5), and the periodic enforcement that makes MFA
 * timeouts and wake/unlock prompts take effect on existing sessions (every 5 s, as upstream).
 */
import type { Store, Tx } from '../store/store.ts';
import { ApiError, fieldError, formatCauseValue, jsonKind, missingTypeId, unknownTypeId } from '../errors.ts';
import type { AccessService } from '../access/access.service.ts';
import type { Clock } from '../resources/entity-service.ts';
import type { Caller } from '../http/caller.ts';
import { cleanHex, loadPostureData, processesByCheckId } from './posture-data.ts';
import { MFA_PROMPT_GRACE_SECONDS, NO_TIMEOUT, sessionMfaFlags } from './posture-check-eval.ts';
import { createPostureEvaluator, type PostureEvaluator } from './posture-evaluator.ts';

/** Response types a client may submit; MFA and PROCESS_MULTI are not among them. */
export const postureResponseTypes = ['OS', 'MAC', 'DOMAIN', 'PROCESS', 'ENDPOINT_STATE'] as const;
type ResponseType = (typeof postureResponseTypes)[number];

export const ENFORCE_INTERVAL_MS = 5000;

type Parsed =
  | { typeId: 'OS'; id: string; type: string; version: string; build: string }
  | { typeId: 'MAC'; id: string; macAddresses: string[] }
  | { typeId: 'DOMAIN'; id: string; domain: string }
  | { typeId: 'PROCESS'; id: string; path: string; isRunning: boolean; hash: string; signerFingerprints: string[] }
  | { typeId: 'ENDPOINT_STATE'; id: string; woken: boolean; unlocked: boolean };

export interface PostureResponseService {
  id: string;
  name: string;
  postureQueryType: string;
  timeout: number;
  timeoutRemaining: number;
}

export interface PostureServiceDeps {
  store: Store;
  access: AccessService;
  clock: Clock;
  evaluator?: PostureEvaluator;
  enforceIntervalMs?: number;
  /** Whether this process runs the timed enforcement pass (the network's leader); default: always. */
  leads?: () => boolean;
}

/** A body reader that matches keys case-insensitively (as Go's JSON decoding does), exact spelling first. */
function reader(body: Record<string, unknown>, prefix: string) {
  const keys = Object.keys(body);
  const get = (name: string): unknown => {
    if (name in body) return body[name];
    const key = keys.find((k) => k.toLowerCase() === name.toLowerCase());
    return key === undefined ? undefined : body[key];
  };
  const label = (name: string) => prefix + name;
  const typeError = (name: string, type: string, value: unknown) =>
    fieldError(label(name), `${label(name)} in body must be of type ${type}: ${JSON.stringify(formatCauseValue(value))}`, value);
  return {
    get,
    string(name: string, required: boolean): string {
      const v = get(name);
      if (v === undefined || v === null) {
        if (required) throw fieldError(label(name), `${label(name)} in body is required`, undefined);
        return '';
      }
      if (typeof v !== 'string') throw typeError(name, 'string', v);
      return v;
    },
    boolean(name: string): boolean {
      const v = get(name);
      if (v === undefined || v === null) return false;
      if (typeof v !== 'boolean') throw typeError(name, 'boolean', v);
      return v;
    },
    strings(name: string, required: boolean): string[] {
      const v = get(name);
      if (v === undefined || v === null) {
        if (required) throw fieldError(label(name), `${label(name)} in body is required`, undefined);
        return [];
      }
      if (!Array.isArray(v)) throw typeError(name, 'array', v);
      v.forEach((item, i) => {
        if (typeof item !== 'string') throw typeError(`${name}.${i}`, 'string', item);
      });
      return v as string[];
    },
  };
}

/** Validates one posture response (the discriminator first, then the type's fields). */
export function parsePostureResponse(item: unknown, prefix = ''): Parsed {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    const field = prefix ? prefix.slice(0, -1) : 'body';
    throw fieldError(field, `${field} in body must be of type object: ${JSON.stringify(formatCauseValue(item))}`, item);
  }
  const r = reader(item as Record<string, unknown>, prefix);
  const typeId = r.get('typeId');
  if (typeId === undefined || typeId === null || typeId === '') throw missingTypeId(`${prefix}typeId`);
  if (typeof typeId !== 'string') {
    throw new ApiError('COULD_NOT_PARSE_BODY', { cause: { code: 'UNHANDLED', message: `json: cannot unmarshal ${jsonKind(typeId)} into Go struct field .typeId of type string` } });
  }
  if (!(postureResponseTypes as readonly string[]).includes(typeId)) throw unknownTypeId(typeId);
  const id = r.string('id', true);
  switch (typeId as ResponseType) {
    case 'OS':
      return { typeId: 'OS', id, type: r.string('type', true), version: r.string('version', true), build: r.string('build', false) };
    case 'MAC':
      return { typeId: 'MAC', id, macAddresses: r.strings('macAddresses', true) };
    case 'DOMAIN':
      return { typeId: 'DOMAIN', id, domain: r.string('domain', true) };
    case 'PROCESS':
      return {
        typeId: 'PROCESS',
        id,
        path: r.string('path', false),
        isRunning: r.boolean('isRunning'),
        hash: r.string('hash', false),
        signerFingerprints: r.strings('signerFingerprints', false),
      };
    case 'ENDPOINT_STATE':
      return { typeId: 'ENDPOINT_STATE', id, woken: r.boolean('woken'), unlocked: r.boolean('unlocked') };
  }
}

export function createPostureService(deps: PostureServiceDeps) {
  const { store, access, clock } = deps;
  const evaluator = deps.evaluator ?? createPostureEvaluator({ store, access, clock });
  let timer: NodeJS.Timeout | undefined;

  async function storeResponse(tx: Tx, caller: Caller, r: Parsed, now: string): Promise<void> {
    const identityId = caller.identity.id;
    const upsertResponse = (typeId: string, data: Record<string, unknown>) =>
      tx.run(
        `INSERT INTO posture_responses (identity_id, type_id, posture_check_id, data, last_updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(identity_id, type_id) DO UPDATE SET posture_check_id = excluded.posture_check_id, data = excluded.data,
           last_updated_at = excluded.last_updated_at`,
        [identityId, typeId, r.id, JSON.stringify(data), now],
      );
    switch (r.typeId) {
      case 'OS':
        await upsertResponse('OS', { type: r.type, version: r.version, build: r.build });
        break;
      case 'MAC':
        await upsertResponse('MAC', { addresses: r.macAddresses.map(cleanHex) });
        break;
      case 'DOMAIN':
        await upsertResponse('DOMAIN', { domain: r.domain });
        break;
      case 'PROCESS': {
        const seq = ((await tx.value<number | null>('SELECT MAX(seq) AS m FROM posture_processes WHERE identity_id = ?', [identityId])) ?? 0) + 1;
        await tx.run(
          `INSERT INTO posture_processes (identity_id, posture_check_id, path, is_running, binary_hash, signer_fingerprints, last_updated_at, seq)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(identity_id, posture_check_id, path) DO UPDATE SET is_running = excluded.is_running, binary_hash = excluded.binary_hash,
             signer_fingerprints = excluded.signer_fingerprints, last_updated_at = excluded.last_updated_at, seq = excluded.seq`,
          [identityId, r.id, r.path, r.isRunning ? 1 : 0, cleanHex(r.hash), JSON.stringify(r.signerFingerprints.map(cleanHex)), now, seq],
        );
        break;
      }
      case 'ENDPOINT_STATE':
        await tx.run(
          `INSERT INTO posture_endpoint_states (api_session_id, woken_at, unlocked_at) VALUES (?, ?, ?)
           ON CONFLICT(api_session_id) DO UPDATE SET woken_at = COALESCE(excluded.woken_at, posture_endpoint_states.woken_at),
             unlocked_at = COALESCE(excluded.unlocked_at, posture_endpoint_states.unlocked_at)`,
          [caller.apiSession.id, r.woken ? now : null, r.unlocked ? now : null],
        );
        break;
    }
  }

  /**
   * Services whose MFA prompt timers a wake/unlock event altered: every service of a policy with an MFA
   * check prompting on that event whose remaining time exceeds the grace period (not filtered by access).
   */
  async function affectedServices(apiSessionId: string, identityId: string, onWake: boolean, onUnlock: boolean): Promise<PostureResponseService[]> {
    const session = (await loadPostureData(store, identityId)).apiSessions.get(apiSessionId);
    if (!session?.passedMfaAt) return [];
    const sinceMfa = Math.trunc((clock.now().getTime() - Date.parse(session.passedMfaAt)) / 1000);
    const rows = await store.all<{ id: string; details: string }>("SELECT id, details FROM posture_checks WHERE type_id = 'MFA' ORDER BY id");
    const timeouts = new Map<string, number>();
    for (const row of rows) {
      const d = JSON.parse(row.details || '{}') as Record<string, unknown>;
      const timeout = typeof d.timeoutSeconds === 'number' && d.timeoutSeconds > 0 ? d.timeoutSeconds : NO_TIMEOUT;
      if (!((d.promptOnWake === true && onWake) || (d.promptOnUnlock === true && onUnlock))) continue;
      if (timeout !== NO_TIMEOUT && timeout - sinceMfa <= MFA_PROMPT_GRACE_SECONDS) continue;
      for (const policyId of access.index.policiesOf('postureCheck', row.id, 'servicePolicy')) {
        for (const serviceId of access.index.membersOf(policyId, 'serviceRoles')) {
          const current = timeouts.get(serviceId);
          if (current === undefined || timeout < current) timeouts.set(serviceId, timeout);
        }
      }
    }
    const out: PostureResponseService[] = [];
    for (const [serviceId, timeout] of [...timeouts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const row = await store.get<{ name: string }>('SELECT name FROM services WHERE id = ?', [serviceId]);
      if (row) out.push({ id: serviceId, name: row.name, postureQueryType: 'MFA', timeout, timeoutRemaining: MFA_PROMPT_GRACE_SECONDS });
    }
    return out;
  }

  /** `POST /posture-response(-bulk)`: validate all, store, bump the mark, drop failing sessions. */
  async function submit(caller: Caller, items: unknown[], bulk: boolean): Promise<{ services: PostureResponseService[] }> {
    const parsed = items.map((item, i) => parsePostureResponse(item, bulk ? `${i}.` : ''));
    const identityId = caller.identity.id;
    await store.write(async (tx) => {
      const now = clock.now().toISOString();
      for (const r of parsed) await storeResponse(tx, caller, r, now);
      await access.touch(tx, [identityId]);
      await evaluator.enforce(tx, [identityId]);
    });
    const states = parsed.filter((r) => r.typeId === 'ENDPOINT_STATE');
    const onWake = states.some((r) => r.woken);
    const onUnlock = states.some((r) => r.unlocked);
    return { services: onWake || onUnlock ? await affectedServices(caller.apiSession.id, identityId, onWake, onUnlock) : [] };
  }

  /** `GET /identities/{id}/posture-data` (the identity must exist; the route checks). */
  async function postureData(identityId: string): Promise<Record<string, unknown>> {
    const data = await loadPostureData(store, identityId);
    const now = clock.now().getTime();
    const base = (r: { postureCheckId: string; lastUpdatedAt: string } | undefined) => ({
      lastUpdatedAt: r?.lastUpdatedAt ?? null,
      postureCheckId: r?.postureCheckId ?? '',
      timedOut: false,
    });
    const apiSessionPostureData: Record<string, unknown> = {};
    for (const [id, s] of data.apiSessions) {
      const flags = sessionMfaFlags(s, now);
      apiSessionPostureData[id] = {
        endpointState: { unlockedAt: s.unlockedAt ?? null, wokenAt: s.wokenAt ?? null },
        // Each stays null until its event (MFA passed, woken, unlocked) happened in the session.
        mfa: {
          apiSessionId: id,
          passedAt: s.passedMfaAt ?? null,
          passedMfa: !!s.passedMfaAt,
          passedOnUnlock: s.unlockedAt ? flags.passedOnUnlock : null,
          passedOnWake: s.wokenAt ? flags.passedOnWake : null,
        },
        // The identity's last reported SDK, `{}` when none was sent (as upstream).
        sdkInfo: data.sdkInfo ?? {},
      };
    }
    return {
      apiSessionPostureData,
      // What the identity never reported is null, as upstream renders it.
      domain: { ...base(data.domain), domain: data.domain?.domain ?? null },
      mac: { ...base(data.mac), addresses: data.mac?.addresses ?? null },
      os: { ...base(data.os), build: data.os?.build ?? null, type: data.os?.type ?? null, version: data.os?.version ?? null },
      processes: processesByCheckId(data).map((p) => ({
        ...base(p),
        binaryHash: p.binaryHash,
        isRunning: p.isRunning,
        signerFingerprints: p.signerFingerprints,
      })),
    };
  }

  /** One enforcement pass over every session (what the timer runs). */
  async function enforceAll(): Promise<number> {
    if (!evaluator.anyChecks()) return 0;
    return store.write(async (tx) => (await evaluator.enforce(tx)).size);
  }

  /** The timer's pass under way: passes never overlap (a tick that finds one running skips). */
  let running = false;

  function start(): void {
    timer ??= setInterval(() => {
      if (running || deps.leads?.() === false) return;
      running = true;
      // A failed pass (e.g. the store closing) is retried on the next tick.
      void enforceAll()
        .catch(() => 0)
        .finally(() => (running = false));
    }, deps.enforceIntervalMs ?? ENFORCE_INTERVAL_MS);
    timer.unref();
  }

  function stop(): void {
    if (timer) clearInterval(timer);
    timer = undefined;
  }

  return {
    submit,
    postureData,
    failedServiceRequests: evaluator.failedServiceRequests,
    evaluator,
    enforceAll,
    start,
    stop,
  };
}

export type PostureService = ReturnType<typeof createPostureService>;
