/**
 * API sessions: issued at authentication, carried as the `zt-session` token, ended by logout, admin
 * delete, idle timeout or identity removal. A SHA-256 of each token is the lookup key; the token itself is
 * kept only sealed, for routers (token-seal.ts). Activity (every
 * authenticated request, and every router heartbeat naming the session) is marked in memory and flushed in
 * batches, so a busy client or router costs no write per request; expiry checks use the newer of the stored and
 * in-memory times.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Store, Tx } from '../store/store.ts';
import { newCuid, newToken } from '../ids.ts';
import type { Clock } from '../resources/entity-service.ts';
import type { TokenSeal } from './token-seal.ts';

export interface ApiSessionRecord {
  id: string;
  tokenHash: string;
  identityId: string;
  authenticatorId: string;
  ipAddress: string;
  configTypes: string[];
  isMfaRequired: boolean;
  isMfaComplete: boolean;
  isCertExtendable: boolean;
  isCertExtendRequested: boolean;
  isCertKeyRollRequested: boolean;
  improperClientCertChain: boolean;
  lastActivityAt: string;
  createdAt: string;
  updatedAt: string;
  tags: Record<string, unknown>;
  /** OIDC sessions (src/oidc/): the client that started it; undefined for a zt-session. */
  oidcClientId?: string;
  /** OIDC sessions: when the newest refresh token expires, and with it the session (no idle timeout). */
  expiresAt?: string;
}

export interface NewApiSession {
  identityId: string;
  authenticatorId: string;
  ipAddress: string;
  configTypes: string[];
  isMfaRequired?: boolean;
  isCertExtendable?: boolean;
  improperClientCertChain?: boolean;
  isCertExtendRequested?: boolean;
  isCertKeyRollRequested?: boolean;
  /** Started through /oidc: its client and when it ends (see ApiSessionRecord). */
  oidc?: { clientId: string; expiresAt: string };
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function decodeApiSessionRow(row: Record<string, unknown>): ApiSessionRecord {
  return {
    id: row.id as string,
    tokenHash: row.token_hash as string,
    identityId: row.identity_id as string,
    authenticatorId: row.authenticator_id as string,
    ipAddress: row.ip_address as string,
    configTypes: JSON.parse(row.config_types as string) as string[],
    isMfaRequired: row.is_mfa_required === 1,
    isMfaComplete: row.is_mfa_complete === 1,
    isCertExtendable: row.is_cert_extendable === 1,
    isCertExtendRequested: row.is_cert_extend_requested === 1,
    isCertKeyRollRequested: row.is_cert_key_roll_requested === 1,
    improperClientCertChain: row.improper_client_cert_chain === 1,
    lastActivityAt: row.last_activity_at as string,
    createdAt: row.created_at as string,
    updatedAt: row.updated_at as string,
    tags: JSON.parse(row.tags as string) as Record<string, unknown>,
    ...(typeof row.oidc_client_id === 'string' ? { oidcClientId: row.oidc_client_id } : {}),
    ...(typeof row.expires_at === 'string' ? { expiresAt: row.expires_at } : {}),
  };
}

export interface ApiSessionServiceOptions {
  store: Store;
  clock: Clock;
  timeoutMs: number;
  /** How often in-memory activity marks are written and idle sessions removed. */
  maintenanceIntervalMs?: number;
  /**
   * Whether this process runs the network-wide expiry sweep (the leader, src/cluster/membership.ts); every process
   * still writes its own activity marks. Default: always.
   */
  leads?: () => boolean;
  /** Seals each new token for routers (src/auth/token-seal.ts); without it no token is kept. */
  seal?: TokenSeal;
}

/** Ends every API session of an identity (their certificates and sessions go with them), inside `tx`. */
export async function endApiSessionsOf(tx: Tx, identityId: string): Promise<void> {
  await tx.run('DELETE FROM api_sessions WHERE identity_id = ?', [identityId]);
}

export function createApiSessionService(opts: ApiSessionServiceOptions) {
  const { store, clock, timeoutMs } = opts;
  const activity = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;

  async function create(tx: Tx, s: NewApiSession): Promise<{ record: ApiSessionRecord; token: string }> {
    const token = newToken();
    const now = clock.now().toISOString();
    const record: ApiSessionRecord = {
      id: newCuid(),
      tokenHash: hashToken(token),
      identityId: s.identityId,
      authenticatorId: s.authenticatorId,
      ipAddress: s.ipAddress,
      configTypes: s.configTypes,
      isMfaRequired: s.isMfaRequired ?? false,
      isMfaComplete: false,
      isCertExtendable: s.isCertExtendable ?? false,
      isCertExtendRequested: s.isCertExtendRequested ?? false,
      isCertKeyRollRequested: s.isCertKeyRollRequested ?? false,
      improperClientCertChain: s.improperClientCertChain ?? false,
      lastActivityAt: now,
      createdAt: now,
      updatedAt: now,
      tags: {},
      ...(s.oidc ? { oidcClientId: s.oidc.clientId, expiresAt: s.oidc.expiresAt } : {}),
    };
    await tx.run(
      `INSERT INTO api_sessions (id, token_hash, sealed_token, identity_id, authenticator_id, ip_address, config_types, is_mfa_required,
        is_mfa_complete, is_cert_extendable, improper_client_cert_chain, is_cert_extend_requested, is_cert_key_roll_requested,
        last_activity_at, created_at, updated_at, oidc_client_id, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        record.id,
        record.tokenHash,
        // An OIDC session's token is never given out, and routers validate its JWTs themselves: nothing to push.
        opts.seal && !s.oidc ? opts.seal.seal(token, record.id) : null,
        record.identityId,
        record.authenticatorId,
        record.ipAddress,
        JSON.stringify(record.configTypes),
        record.isMfaRequired ? 1 : 0,
        record.isCertExtendable ? 1 : 0,
        record.improperClientCertChain ? 1 : 0,
        record.isCertExtendRequested ? 1 : 0,
        record.isCertKeyRollRequested ? 1 : 0,
        now,
        now,
        now,
        record.oidcClientId ?? null,
        record.expiresAt ?? null,
      ],
    );
    return { record, token };
  }

  /** Newest known activity of a session: stored time or a not yet flushed mark. */
  function lastActivityMs(record: ApiSessionRecord): number {
    return Math.max(Date.parse(record.lastActivityAt), activity.get(record.id) ?? 0);
  }

  function expiresAt(record: ApiSessionRecord): Date {
    if (record.expiresAt !== undefined) return new Date(record.expiresAt);
    return new Date(lastActivityMs(record) + timeoutMs);
  }

  /** Sets when an OIDC session ends (a refresh issued a newer refresh token). */
  async function extend(id: string, until: Date): Promise<boolean> {
    const at = until.toISOString();
    const now = clock.now().toISOString();
    const { changes } = await store.writeRuntime((tx) =>
      tx.run('UPDATE api_sessions SET expires_at = ?, updated_at = ? WHERE id = ? AND oidc_client_id IS NOT NULL AND expires_at > ?', [at, now, id, now]),
    );
    return changes > 0;
  }

  /** The stored session a token hash names, as stored (no idle check, no activity mark). */
  async function findByHash(hash: string): Promise<ApiSessionRecord | undefined> {
    const row = await store.get('SELECT * FROM api_sessions WHERE token_hash = ?', [hash]);
    if (!row) return undefined;
    // The lookup is by hash; compare again in constant time so no code path compares secrets naively.
    if (!timingSafeEqual(Buffer.from(row.token_hash as string), Buffer.from(hash))) return undefined;
    return decodeApiSessionRow(row);
  }

  /**
   * The per-request half of resolving: undefined when the session is idle too long (by the newer of the
   * stored time and this process's mark), else marks activity now and returns the record.
   */
  async function touch(record: ApiSessionRecord): Promise<ApiSessionRecord | undefined> {
    const now = clock.now().getTime();
    if (!mark(record, now)) return undefined;
    const stored = storeAtOnce([record], now);
    if (stored.length > 0) await store.writeRuntime((tx) => writeMarks(tx, stored, now));
    return record;
  }

  /** Marks activity now unless the session is idle too long already (by the newer of both times). */
  function mark(record: Pick<ApiSessionRecord, 'id' | 'lastActivityAt' | 'expiresAt'>, now: number): boolean {
    if (record.expiresAt !== undefined) {
      // An OIDC session ends with its refresh token, not after an idle time.
      if (Date.parse(record.expiresAt) <= now) return false;
    } else if (Math.max(Date.parse(record.lastActivityAt), activity.get(record.id) ?? 0) + timeoutMs <= now) {
      return false;
    }
    activity.set(record.id, now);
    return true;
  }

  /**
   * Other worker processes only see the stored time: a session whose stored time is half a timeout old has its mark
   * stored now rather than at the next flush, so no other process's sweep can remove a session in use.
   */
  function storeAtOnce(records: ReadonlyArray<Pick<ApiSessionRecord, 'id' | 'lastActivityAt' | 'expiresAt'>>, now: number): string[] {
    return records.filter((r) => r.expiresAt === undefined && now - Date.parse(r.lastActivityAt) > timeoutMs / 2).map((r) => r.id);
  }

  async function writeMarks(tx: Tx, ids: readonly string[], ms: number): Promise<void> {
    const at = new Date(ms).toISOString();
    // In id order, as the flush below: a runtime write (touch, heartbeats) runs beside it on PostgreSQL, and rows
    // locked in one order cannot deadlock.
    for (const id of [...ids].sort()) await tx.run('UPDATE api_sessions SET last_activity_at = ? WHERE id = ? AND last_activity_at < ?', [at, id, at]);
  }

  /**
   * Marks the sessions of these token hashes active (a router's heartbeat: its SDKs use them), in memory like
   * requests, flushed with them. Returns the hashes of no live session (unknown, or idle too long).
   */
  async function markActiveByHashes(hashes: readonly string[]): Promise<Set<string>> {
    const now = clock.now().getTime();
    const unknown = new Set(hashes);
    const found: Array<{ id: string; lastActivityAt: string }> = [];
    for (const hash of unknown) {
      const row = await store.get<{ id: string; last_activity_at: string }>('SELECT id, last_activity_at FROM api_sessions WHERE token_hash = ?', [hash]);
      const record = row && { id: row.id, lastActivityAt: row.last_activity_at };
      if (!record || !mark(record, now)) continue;
      unknown.delete(hash);
      found.push(record);
    }
    const stored = storeAtOnce(found, now);
    if (stored.length > 0) await store.writeRuntime((tx) => writeMarks(tx, stored, now));
    return unknown;
  }

  /** The live session a token names, marking activity; undefined when unknown or idle too long. */
  async function resolve(token: string): Promise<ApiSessionRecord | undefined> {
    const record = await findByHash(hashToken(token));
    return record && touch(record);
  }

  async function get(id: string): Promise<ApiSessionRecord | undefined> {
    const row = await store.get('SELECT * FROM api_sessions WHERE id = ?', [id]);
    return row ? decodeApiSessionRow(row) : undefined;
  }

  async function remove(tx: Tx, id: string): Promise<boolean> {
    activity.delete(id);
    return (await tx.run('DELETE FROM api_sessions WHERE id = ?', [id])).changes > 0;
  }

  async function removeForIdentity(tx: Tx, identityId: string): Promise<void> {
    await endApiSessionsOf(tx, identityId);
  }

  /** Writes pending activity marks, then deletes sessions idle longer than the timeout. */
  async function maintain(): Promise<void> {
    const marks = [...activity.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    activity.clear();
    const cutoff = new Date(clock.now().getTime() - timeoutMs).toISOString();
    const nowIso = clock.now().toISOString();
    try {
      await store.write(async (tx) => {
        for (const [id, ms] of marks) await writeMarks(tx, [id], ms);
        if (opts.leads?.() === false) return;
        await tx.run('DELETE FROM api_sessions WHERE expires_at IS NULL AND last_activity_at < ?', [cutoff]);
        await tx.run('DELETE FROM api_sessions WHERE expires_at < ?', [nowIso]);
        // Revocations of ended JWT sessions outlive them only until their tokens would have expired.
        await tx.run('DELETE FROM revocations WHERE expires_at < ?', [nowIso]);
      });
    } catch (err) {
      // Not written (store full or busy): keep the marks for the next pass, newest wins.
      for (const [id, ms] of marks) if ((activity.get(id) ?? 0) < ms) activity.set(id, ms);
      throw err;
    }
  }

  /** The pass under way, if any: passes never overlap (a tick that finds one running skips). */
  let running: Promise<void> | undefined;

  function start(): void {
    timer ??= setInterval(() => {
      if (running) return;
      // A failed pass (store busy or closing) is retried on the next tick; the marks were kept.
      running = maintain()
        .catch(() => undefined)
        .finally(() => (running = undefined));
    }, opts.maintenanceIntervalMs ?? 5000);
    timer.unref();
  }

  /** Stops the timer and writes what is pending (after a pass under way); call before the store closes. */
  async function stop(): Promise<void> {
    if (timer) clearInterval(timer);
    timer = undefined;
    await running;
    await maintain();
  }

  return { create, resolve, findByHash, touch, markActiveByHashes, get, remove, removeForIdentity, expiresAt, extend, lastActivityMs, maintain, start, stop, timeoutMs };
}

export type ApiSessionService = ReturnType<typeof createApiSessionService>;
