/**
 * One write is one transaction, opened by the service. Store functions take the transaction as their
 * first argument; side effects that must only see durable data (index updates, change events) are
 * registered with `afterCommit` and run once the transaction has committed, never on rollback.
 */
import type { Db } from './database.ts';

export interface Tx {
  readonly db: Db;
  afterCommit(fn: () => void): void;
}

/** Runs `work` in an immediate write transaction; commit hooks run after a successful commit. */
export function withTransaction<T>(db: Db, work: (tx: Tx) => T): T {
  const hooks: Array<() => void> = [];
  const tx: Tx = { db, afterCommit: (fn) => hooks.push(fn) };
  const result = db.transaction(() => work(tx)).immediate();
  for (const hook of hooks) hook();
  return result;
}

/** A read-only view used by queries that do not need a write lock. */
export function readTx(db: Db): Tx {
  return {
    db,
    afterCommit: () => {
      throw new Error('afterCommit is only available inside a write transaction');
    },
  };
}
