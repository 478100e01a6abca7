/**
 * What the fabric reads from the store: API sessions as routers need them (token unsealed, with the
 * certificate fingerprints an SDK may connect with), and the change-feed rows that say which API sessions
 * and service sessions came or went since the last look, whichever process wrote them (the rows come from
 * store triggers, migration 0026).
 */
import type { TokenSeal } from '../auth/token-seal.ts';
import { modelHead } from '../cluster/change-feed.ts';
import type { Sql, Store } from '../store/store.ts';
import type { RouterApiSession } from './edge-sync.ts';

interface SessionRow {
  id: string;
  identity_id: string;
  sealed_token: string | null;
}

/** API sessions routers may verify SDKs against: every one with a sealed token, or the named ones. */
export async function readRouterApiSessions(q: Sql, seal: TokenSeal, ids?: readonly string[]): Promise<RouterApiSession[]> {
  let rows: SessionRow[];
  if (ids === undefined) {
    rows = await q.all<SessionRow>('SELECT id, identity_id, sealed_token FROM api_sessions WHERE sealed_token IS NOT NULL');
  } else {
    rows = [];
    for (const id of ids) rows.push(...(await q.all<SessionRow>('SELECT id, identity_id, sealed_token FROM api_sessions WHERE id = ? AND sealed_token IS NOT NULL', [id])));
  }
  if (rows.length === 0) return [];
  const identityPrints = new Map<string, string[]>();
  const identitySql = "SELECT fingerprint FROM authenticators WHERE identity_id = ? AND method = 'cert' AND fingerprint IS NOT NULL";
  const sessionSql = 'SELECT fingerprint FROM api_session_certificates WHERE api_session_id = ?';
  const out: RouterApiSession[] = [];
  for (const row of rows) {
    const token = seal.open(row.sealed_token!, row.id);
    if (token === undefined) continue;
    let prints = identityPrints.get(row.identity_id);
    if (!prints) {
      prints = await q.column<string>(identitySql, [row.identity_id]);
      identityPrints.set(row.identity_id, prints);
    }
    const own = await q.column<string>(sessionSql, [row.id]);
    out.push({ id: row.id, token, identityId: row.identity_id, certFingerprints: [...prints, ...own].map((p) => p.toLowerCase()) });
  }
  return out;
}

/** One session row of the feed: an API session created or ended, or a service session ended. */
export interface SessionEvent {
  seq: number;
  kind: 'apiSessionAdded' | 'apiSessionRemoved' | 'sessionRemoved';
  id: string;
}

export interface SessionEvents {
  /** In feed order. */
  events: SessionEvent[];
  /** Rows were trimmed unread: routers need the full API session state again. */
  missed: boolean;
}

/**
 * The change feed's newest model seq: what a read of the API sessions in the same transaction includes (model rows
 * commit in seq order; a runtime row's seq says nothing of them: src/cluster/change-feed.ts).
 */
export function feedHead(q: Sql): Promise<number> {
  return modelHead(q);
}

/**
 * A reader of the change feed's session rows, starting at the feed's head. Whoever sends a router the full API
 * session state notes the feed's head read with it (`feedHead`), and sends that router only events above it: the
 * reader itself may lag behind (it is polled), and the full state already holds what came before.
 */
export function createSessionEventReader(store: Store) {
  // The head at creation, read now; the first poll or skip waits for it.
  const start = feedHead(store);
  // Whoever polls first sees a failure; until then it is not an unhandled rejection.
  start.catch(() => undefined);
  let position: number | undefined;
  /** The store's commit mark at the last poll that read: while it stands, nobody committed and nothing is read. */
  let polledAt: unknown;

  /** Everything since the last call (one call at a time: the caller serializes them with `skip`). */
  async function poll(): Promise<SessionEvents> {
    const out: SessionEvents = { events: [], missed: false };
    position ??= await start;
    const at = store.commitMark?.();
    if (at !== undefined && at === polledAt) return out;
    polledAt = at;
    const trimmed = await store.value<number>('SELECT trimmed_through FROM change_feed_trim WHERE id = 1');
    if (trimmed !== undefined && trimmed > position) {
      out.missed = true;
      position = await feedHead(store);
      return out;
    }
    // Up to the head read first, so rows of other kinds are passed over once, not at every poll.
    const top = await feedHead(store);
    if (top <= position) return out;
    const sql = "SELECT seq, kind, entity_id, op FROM change_feed WHERE seq > ? AND seq <= ? AND kind IN ('apiSession', 'session') ORDER BY seq";
    const rows = await store.all<{ seq: number; kind: string; entity_id: string; op: string }>(sql, [position, top]);
    position = top;
    for (const row of rows) {
      const kind = row.kind === 'session' ? 'sessionRemoved' : row.op === 'remove' ? 'apiSessionRemoved' : 'apiSessionAdded';
      out.events.push({ seq: row.seq, kind, id: row.entity_id });
    }
    return out;
  }

  /** Passes over everything up to the head unread (no router would get it). */
  async function skip(): Promise<void> {
    polledAt = undefined;
    position = await feedHead(store);
  }

  return { poll, skip };
}
