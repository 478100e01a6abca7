/**
 * Authentication as a whole: runs the method strategy, records the client's envInfo/sdkInfo, resolves the
 * requested config types, issues the API session, and turns a `zt-session` token back into a Caller on
 * every request. Also renders the API session read models (current and management views).
 */
import { identityRef } from '../resources/entity-ref.ts';
import type { Sql, Store } from '../store/store.ts';
import { ApiError } from '../errors.ts';
import type { Caller } from '../http/caller.ts';
import type { IdentityService } from '../resources/identities/identity.service.ts';
import { hashToken, type ApiSessionRecord, type ApiSessionService } from './api-session.service.ts';
import { createCallerCache, type CallerState } from './caller-cache.ts';
import { systemClock, type Clock } from '../resources/entity-service.ts';
import type { AuthMethod, AuthRequest } from './methods/auth-method.ts';
import type { AuthQuery, SecondaryFactors, SecondaryState } from './secondary-factors.ts';

export interface AuthenticationDeps {
  store: Store;
  identities: IdentityService;
  apiSessions: ApiSessionService;
  methods: AuthMethod[];
  /** Secondary factors (MFA, required external JWT); without them every session is full. */
  secondary?: SecondaryFactors;
  /** Whether the identity has a verified MFA record (its sessions then start partial). */
  mfaEnabled?: (identityId: string) => boolean | Promise<boolean>;
  /** The clock the identity summaries are computed with (the system clock by default). */
  clock?: Clock;
  /** Most token hashes the caller cache holds (caller-cache.ts). */
  callerCacheSize?: number;
}

/** `configTypes` on authenticate: names or ids, `all` wins, unknown entries are dropped; ids come back. */
export async function resolveConfigTypes(q: Sql, requested: unknown): Promise<string[]> {
  if (!Array.isArray(requested)) return [];
  const list = requested.filter((x): x is string => typeof x === 'string');
  if (list.includes('all')) return ['all'];
  const ids = new Set<string>();
  for (const entry of list) {
    const row = await q.get<{ id: string }>('SELECT id FROM config_types WHERE id = ? OR name = ?', [entry, entry]);
    if (row) ids.add(row.id);
  }
  return [...ids];
}

const envInfoKeys = ['arch', 'os', 'osRelease', 'osVersion', 'domain', 'hostname'];
const sdkInfoKeys = ['appId', 'appVersion', 'branch', 'revision', 'type', 'version'];

/** Keeps the known string members (matched case-insensitively, as Go's JSON decoding does), non-empty only. */
function pickInfo(value: unknown, keys: string[]): Record<string, string> | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const key = keys.find((known) => known.toLowerCase() === k.toLowerCase());
    if (key && typeof v === 'string' && v !== '') out[key] = v.slice(0, 255);
  }
  return out;
}

/** Go's time.String() rendering used by the `expires-at` header, e.g. `2026-03-10 07:30:00.123 +0000 UTC`. */
export function goTimeString(d: Date): string {
  const iso = d.toISOString();
  const frac = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${frac ? '.' + frac : ''} +0000 UTC`;
}

export function createAuthenticationService(deps: AuthenticationDeps) {
  const { store, identities, apiSessions } = deps;
  const clock = deps.clock ?? systemClock;
  const methods = new Map(deps.methods.map((m) => [m.name, m]));

  /**
   * Primary authentication by a method, then the API session: a zt-session, or with `oidc` a session of an OIDC
   * login (its token is never given out; its JWTs are). Pending secondary factors come back as auth queries.
   */
  async function authenticate(methodName: string, req: AuthRequest, oidc?: { clientId: string; expiresAt: string }) {
    const method = methods.get(methodName);
    if (!method) throw new ApiError('INVALID_AUTH_METHOD');
    const outcome = await method.authenticate(req);
    const envInfo = pickInfo(req.body.envInfo, envInfoKeys);
    const sdkInfo = pickInfo(req.body.sdkInfo, sdkInfoKeys);
    const configTypes = await resolveConfigTypes(store, req.body.configTypes);
    const authPolicyId = (await identities.summary(outcome.identityId))?.authPolicyId ?? 'default';
    // As upstream: required only when the identity has verified MFA. A policy that requires TOTP of an identity
    // without MFA still leaves the TOTP query pending (secondary-factors.ts), but the session does not claim MFA.
    const isMfaRequired = (await deps.mfaEnabled?.(outcome.identityId)) ?? false;
    const session = await store.write(async (tx) => {
      if (envInfo) await tx.run('UPDATE identities SET env_info = ? WHERE id = ?', [JSON.stringify(envInfo), outcome.identityId]);
      if (sdkInfo) await tx.run('UPDATE identities SET sdk_info = ? WHERE id = ?', [JSON.stringify(sdkInfo), outcome.identityId]);
      return apiSessions.create(tx, {
        identityId: outcome.identityId,
        authenticatorId: outcome.authenticatorId,
        ipAddress: req.ipAddress,
        configTypes,
        isCertExtendable: outcome.isCertExtendable,
        improperClientCertChain: outcome.improperClientCertChain,
        isCertExtendRequested: outcome.isCertExtendRequested,
        isCertKeyRollRequested: outcome.isCertKeyRollRequested,
        isMfaRequired,
        oidc,
      });
    });
    const state = deps.secondary
      ? await deps.secondary.evaluate(session.record, authPolicyId, req.headers)
      : { authQueries: [] as AuthQuery[], challenge: undefined };
    return { ...session, authQueries: state.authQueries, challenge: state.challenge, envInfo, sdkInfo };
  }

  const callers = createCallerCache({
    store,
    now: () => clock.now().getTime(),
    maxEntries: deps.callerCacheSize,
    async load(key) {
      // A token hash (hex), or `id:` and the id of an OIDC session, whose JWTs name it by `z_asid`.
      const session = key.startsWith('id:') ? await apiSessions.get(key.slice(3)) : await apiSessions.findByHash(key);
      if (key.startsWith('id:') && session?.oidcClientId === undefined) return undefined;
      if (!session) return undefined;
      const identity = await identities.summary(session.identityId);
      if (!identity) return undefined;
      return { session, identity, secondary: await deps.secondary?.settings(identity.authPolicyId) };
    },
  });

  function callerOf(token: string, state: CallerState, secondary: SecondaryState): Caller {
    return { identity: state.identity, apiSession: state.session, token, isPartial: secondary.authQueries.length > 0, authQueries: secondary.authQueries };
  }

  /**
   * The Caller a `zt-session` token names on this request, or undefined (unknown, idle too long, identity
   * gone or disabled). Reads the store as before: the caller cache's counters (and the rows on a miss), an
   * activity mark only when one is due.
   */
  async function resolveCaller(token: string, headers: Record<string, string | string[] | undefined> = {}): Promise<Caller | undefined> {
    const state = await callers.get(hashToken(token));
    if (!state || !(await apiSessions.touch(state.session))) return undefined;
    if (state.identity.disabled) return undefined;
    const apiSession = state.session;
    if (!deps.secondary) {
      return callerOf(token, state, { authQueries: apiSession.isMfaRequired && !apiSession.isMfaComplete ? [{}] : [] });
    }
    return callerOf(token, state, await deps.secondary.evaluateWith(apiSession, state.secondary, headers));
  }

  /**
   * The Caller of an OIDC session on this request, by its id (the `z_asid` of a verified access token), with the
   * rules of a zt-session: the session must still exist (ending it ends its tokens), its identity must exist and
   * not be disabled, and pending secondary factors make it partial.
   */
  async function resolveOidcCaller(apiSessionId: string, token: string, headers: Record<string, string | string[] | undefined> = {}): Promise<Caller | undefined> {
    const state = await callers.get(`id:${apiSessionId}`);
    if (!state || !(await apiSessions.touch(state.session))) return undefined;
    if (state.identity.disabled) return undefined;
    const apiSession = state.session;
    const secondary = deps.secondary
      ? await deps.secondary.evaluateWith(apiSession, state.secondary, headers)
      : { authQueries: apiSession.isMfaRequired && !apiSession.isMfaComplete ? [{}] : [] };
    return callerOf(token, state, secondary);
  }

  async function logout(caller: Caller): Promise<void> {
    await store.write((tx) => apiSessions.remove(tx, caller.apiSession.id));
  }

  /** apiSessionDetail (management view); `token` is only known to the session's own caller. */
  async function presentApiSession(s: ApiSessionRecord, token?: string): Promise<Record<string, unknown>> {
    const owner = await store.get<{ name: string; auth_policy_id: string }>('SELECT name, auth_policy_id FROM identities WHERE id = ?', [s.identityId]);
    const cached = new Date(apiSessions.lastActivityMs(s)).toISOString();
    const out: Record<string, unknown> = {
      _links: { self: { href: `./api-sessions/${s.id}` }, sessions: { href: `./api-sessions/${s.id}/sessions` } },
      createdAt: s.createdAt,
      id: s.id,
      tags: s.tags,
      updatedAt: s.updatedAt,
      authQueries: [],
      authenticatorId: s.authenticatorId,
      cachedLastActivityAt: cached,
      configTypes: s.configTypes,
      identity: identityRef(s.identityId, owner?.name ?? '', owner?.auth_policy_id),
      identityId: s.identityId,
      ipAddress: s.ipAddress,
      isCertExtendable: s.isCertExtendable,
      isMfaComplete: s.isMfaComplete,
      isMfaRequired: s.isMfaRequired,
      lastActivityAt: s.lastActivityAt,
      // Only a hash of the token is stored, so other viewers see that hash, never a usable token.
      token: token ?? s.tokenHash,
    };
    if (s.isCertExtendRequested) out.isCertExtendRequested = true;
    if (s.isCertKeyRollRequested) out.isCertKeyRollRequested = true;
    if (s.improperClientCertChain) out.improperClientCertChain = true;
    return out;
  }

  /** currentApiSessionDetail: the management view plus expiry, for the session's own caller. */
  async function presentCurrent(s: ApiSessionRecord, token: string, authQueries: AuthQuery[] = [], jwtExpiresAt?: Date): Promise<Record<string, unknown>> {
    // A JWT session expires with the access token it was shown with (the client refreshes it before then).
    const expiresAt = jwtExpiresAt ?? apiSessions.expiresAt(s);
    return {
      ...(await presentApiSession(s, token)),
      authQueries,
      expirationSeconds: jwtExpiresAt ? Math.max(0, Math.round((jwtExpiresAt.getTime() - clock.now().getTime()) / 1000)) : Math.round(apiSessions.timeoutMs / 1000),
      expiresAt: expiresAt.toISOString(),
    };
  }

  return { authenticate, resolveCaller, resolveOidcCaller, logout, presentApiSession, presentCurrent };
}

export type AuthenticationService = ReturnType<typeof createAuthenticationService>;
