/**
 * What a PostgreSQL failure means for the store: the server is unreachable, restarting, out of resources or too
 * slow (the request fails with 503 STORAGE_UNAVAILABLE and nothing was changed), the connection is broken (it is
 * dropped from the pool, the pool opens new ones by itself), or the statement itself failed (constraint, syntax:
 * the driver's error goes on, SQLSTATE in `code`, for mapConstraintError and the error handler).
 */
import pg from 'pg';
import { ApiError } from '../../errors.ts';

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOENT', // a Unix socket that is not there (server stopped)
]);

/** Messages of pg and pg-pool for a connection that failed, timed out or is gone. */
const CONNECTION_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|Cannot use a pool after calling end|connection error|socket/i;

function first(err: unknown): unknown {
  // Node 20 tries every address of a name (::1, 127.0.0.1) and reports an AggregateError with an empty message.
  if (err instanceof AggregateError && err.errors.length > 0) return err.errors[0];
  return err;
}

function sqlState(err: unknown): string | undefined {
  const e = first(err);
  return e instanceof pg.DatabaseError && typeof e.code === 'string' ? e.code : undefined;
}

/** The connection that produced `err` can not be used again. */
export function isConnectionBroken(err: unknown): boolean {
  if (err instanceof ApiError) return false;
  const state = sqlState(err);
  if (state === undefined) return true; // not an answer of the server: the socket, a timeout, the driver
  return state.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03';
}

/** The server could not do the work now, whatever the work was. */
export function isUnavailable(err: unknown, readOnly = false): boolean {
  if (err instanceof ApiError) return err.code === 'STORAGE_UNAVAILABLE';
  const e = first(err) as { code?: unknown; message?: unknown } | undefined;
  const state = sqlState(err);
  if (state !== undefined) {
    return (
      /^(08|53|58)/.test(state) ||
      /^57P0[1-4]$/.test(state) ||
      state === '57014' || // statement_timeout (or a cancel)
      state === '55P03' || // lock_timeout
      state === '28000' || // authentication settings changed under a running store
      state === '28P01' ||
      state === '3D000' || // the database was dropped
      (state === '25006' && !readOnly) // a write on a server that became read-only (a standby after failover)
    );
  }
  if (typeof e?.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  return typeof e?.message === 'string' && CONNECTION_MESSAGES.test(e.message);
}

/** 503 STORAGE_UNAVAILABLE; `reason` (the driver's message, never a password) is kept for logs, not rendered. */
export function storageUnavailable(reason: string): ApiError {
  const err = new ApiError('STORAGE_UNAVAILABLE');
  Object.defineProperty(err, 'reason', { value: `PostgreSQL: ${reason}`, enumerable: false });
  return err;
}

/** `err` as the store throws it: STORAGE_UNAVAILABLE when the server could not do the work, else unchanged. */
export function storeError(err: unknown, readOnly = false): unknown {
  if (err instanceof ApiError) return err;
  // Text PostgreSQL can not hold (U+0000 in text or jsonb) that reached the store by a way the HTTP layer does
  // not check: the caller's input, so 400 and not 500.
  const state = sqlState(err);
  if (state === '22021' || state === '22P05') {
    return new ApiError('COULD_NOT_VALIDATE', { cause: { field: '', reason: 'text must not contain the NUL character (U+0000)', value: '' } });
  }
  if (!isUnavailable(err, readOnly)) return err;
  const e = first(err) as { code?: unknown; message?: unknown };
  const message = typeof e?.message === 'string' && e.message ? e.message : String(e?.code ?? 'connection failed');
  return storageUnavailable(message.replace(/\s+/g, ' '));
}
