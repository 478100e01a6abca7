/**
 * Per-process cache of what resolving a `zt-session` token reads from the store: the API session row
 * (decoded), the identity summary and the secondary settings of the identity's auth policy. Keyed by the
 * token's SHA-256 (never by the token itself).
 *
 * Exactness: every entry belongs to one reading of the change counters of api_sessions, their stored
 * activity time, identities and auth_policies (migrations 0022, 0023). Each lookup reads the counters
 * first; when any moved, whichever process wrote, every entry is dropped. The counters are read before
 * the rows, so an entry is never labelled newer than what it holds. What depends on time is left to the
 * caller and computed per request (idle expiry, activity marks); the one time-dependent field of the
 * summary, `disabled`, only turns from true to false as time passes, so only summaries that are not
 * disabled are kept, and only used at or after the time they were read.
 *
 * Entries are frozen: a request that tried to change shared state would fail loudly, not leak into the
 * next one. Size is bounded (oldest entry dropped first). Lookups of concurrent requests interleave: a state
 * is kept only when the counters it was read under are still the current ones when it arrives.
 */
import type { Store } from '../store/store.ts';
import type { ApiSessionRecord } from './api-session.service.ts';
import type { IdentitySummary } from '../resources/identities/identity.service.ts';
import type { SecondarySettings } from './auth-policy-reader.ts';

export interface CallerState {
  session: ApiSessionRecord;
  identity: IdentitySummary;
  /** Secondary settings of the identity's auth policy (undefined when the policy is missing or not consulted). */
  secondary: SecondarySettings | undefined;
}

export interface CallerCacheOptions {
  store: Store;
  /** Reads the state a token hash names from the store; undefined when there is no such session or identity. */
  load(hash: string): Promise<CallerState | undefined>;
  /** Milliseconds since the epoch, on the clock the identity summary's `disabled` is computed with. */
  now(): number;
  maxEntries?: number;
}

interface Entry {
  state: CallerState;
  /** When the state was read (after the summary's `disabled` was computed). */
  readAt: number;
}

export const defaultMaxCallerEntries = 10_000;

function freeze(state: CallerState): CallerState {
  Object.freeze(state.session.configTypes);
  Object.freeze(state.session.tags);
  Object.freeze(state.session);
  Object.freeze(state.identity.permissions);
  Object.freeze(state.identity);
  if (state.secondary) Object.freeze(state.secondary);
  return Object.freeze(state);
}

export function createCallerCache(opts: CallerCacheOptions) {
  const maxEntries = opts.maxEntries ?? defaultMaxCallerEntries;
  const versions = opts.store.versions(['api_sessions', 'api_session_activity', 'identities', 'auth_policies']);
  const entries = new Map<string, Entry>();
  let version: string | undefined;

  /** The state a token hash names, as the store holds it now (from the cache when that is still exact). */
  async function get(hash: string): Promise<CallerState | undefined> {
    const current = await versions();
    if (current !== version) {
      entries.clear();
      version = current;
    }
    const hit = entries.get(hash);
    if (hit && opts.now() >= hit.readAt) return hit.state;
    const state = await opts.load(hash);
    // Counters moved while it was read (another lookup saw them): the entries now belong to a newer reading.
    if (version !== current) return state;
    if (!state) {
      entries.delete(hash);
      return undefined;
    }
    if (state.identity.disabled) {
      entries.delete(hash);
      return state;
    }
    if (!hit && entries.size >= maxEntries) entries.delete(entries.keys().next().value as string);
    entries.set(hash, { state: freeze(state), readAt: opts.now() });
    return state;
  }

  return {
    get,
    /** Entries held (for tests and diagnostics). */
    get size(): number {
      return entries.size;
    },
  };
}

export type CallerCache = ReturnType<typeof createCallerCache>;
