/**
 * What the fabric reads from the store: API sessions as routers need them (token unsealed, with the
 * certificate fingerprints an SDK may connect with), and the change-feed rows that say which API sessions
 * and service sessions came or went since the last look, whichever process wrote them (the rows come from
 * store triggers, migration 0026).
 */
import type { TokenSeal } from '../auth/token-seal.ts';
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';
import type { RouterApiSession } from './edge-sync.ts';

interface SessionRow {
  id: string;
  identity_id: string;
  sealed_token: string | null;
}

/** API sessions routers may verify SDKs against: every one with a sealed token, or the named ones. */
export function readRouterApiSessions(db: Db, seal: TokenSeal, ids?: readonly string[]): RouterApiSession[] {
  const rows =
    ids === undefined
      ? (prepare(db, 'SELECT id, identity_id, sealed_token FROM api_sessions WHERE sealed_token IS NOT NULL').all() as SessionRow[])
      : ids.flatMap((id) => (prepare(db, 'SELECT id, identity_id, sealed_token FROM api_sessions WHERE id = ? AND sealed_token IS NOT NULL').all(id) as SessionRow[]));
  if (rows.length === 0) return [];
  const identityPrints = new Map<string, string[]>();
  const identityStmt = prepare(db, "SELECT fingerprint FROM authenticators WHERE identity_id = ? AND method = 'cert' AND fingerprint IS NOT NULL");
  const sessionStmt = prepare(db, 'SELECT fingerprint FROM api_session_certificates WHERE api_session_id = ?');
  const out: RouterApiSession[] = [];
  for (const row of rows) {
    const token = seal.open(row.sealed_token!, row.id);
    if (token === undefined) continue;
    let prints = identityPrints.get(row.identity_id);
    if (!prints) {
      prints = identityStmt.pluck().all(row.identity_id) as string[];
      identityPrints.set(row.identity_id, prints);
    }
    const own = sessionStmt.pluck().all(row.id) as string[];
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

/** The change feed's newest seq: what a read of the API sessions in the same transaction includes. */
export function feedHead(db: Db): number {
  return (prepare(db, 'SELECT COALESCE(MAX(seq), 0) FROM change_feed').pluck().get() as number) ?? 0;
}

/**
 * A reader of the change feed's session rows, starting at the feed's head. Whoever sends a router the full API
 * session state notes the feed's head read with it (`feedHead`), and sends that router only events above it: the
 * reader itself may lag behind (it is polled), and the full state already holds what came before.
 */
export function createSessionEventReader(db: Db) {
  let position = feedHead(db);

  /** Everything since the last call. */
  function poll(): SessionEvents {
    const out: SessionEvents = { events: [], missed: false };
    const trimmed = prepare(db, 'SELECT trimmed_through FROM change_feed_trim WHERE id = 1').pluck().get() as number | undefined;
    if (trimmed !== undefined && trimmed > position) {
      out.missed = true;
      position = feedHead(db);
      return out;
    }
    // Up to the head read first, so rows of other kinds are passed over once, not at every poll.
    const top = feedHead(db);
    if (top <= position) return out;
    const sql = "SELECT seq, kind, entity_id, op FROM change_feed WHERE seq > ? AND seq <= ? AND kind IN ('apiSession', 'session') ORDER BY seq";
    const rows = prepare(db, sql).all(position, top) as Array<{ seq: number; kind: string; entity_id: string; op: string }>;
    position = top;
    for (const row of rows) {
      const kind = row.kind === 'session' ? 'sessionRemoved' : row.op === 'remove' ? 'apiSessionRemoved' : 'apiSessionAdded';
      out.events.push({ seq: row.seq, kind, id: row.entity_id });
    }
    return out;
  }

  /** Passes over everything up to the head unread (no router would get it). */
  function skip(): void {
    position = feedHead(db);
  }

  return { poll, skip };
}
