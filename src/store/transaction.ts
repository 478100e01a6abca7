/**
 * One write is one transaction, opened by the service. Store functions take the transaction as their
 * first argument; side effects that must only see durable data (change events) are registered with
 * `afterCommit` and run once the transaction has committed, never on rollback. In-memory state changed
 * inside the transaction (the access index) registers `onRollback` to restore itself from the store.
 */
import type { Db } from './database.ts';

export interface Tx {
  readonly db: Db;
  afterCommit(fn: () => void): void;
  onRollback(fn: () => void): void;
}

/** Runs `work` in an immediate write transaction; commit hooks run after a successful commit. */
export function withTransaction<T>(db: Db, work: (tx: Tx) => T): T {
  const hooks: Array<() => void> = [];
  const rollbacks: Array<() => void> = [];
  const tx: Tx = { db, afterCommit: (fn) => hooks.push(fn), onRollback: (fn) => rollbacks.push(fn) };
  let result: T;
  try {
    result = db.transaction(() => work(tx)).immediate();
  } catch (err) {
    for (const fn of rollbacks) fn();
    throw err;
  }
  for (const hook of hooks) hook();
  return result;
}

/** A read-only view used by queries that do not need a write lock. */
export function readTx(db: Db): Tx {
  const refuse = () => {
    throw new Error('only available inside a write transaction');
  };
  return { db, afterCommit: refuse, onRollback: refuse };
}
