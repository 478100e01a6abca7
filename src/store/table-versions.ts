/**
 * Per-table change counters (migration 0022): triggers bump a table's counter in the transaction of every
 * committed change, whichever process made it. A per-process read cache keeps the counter it was built at
 * and is current exactly while the stored counter is unchanged; reading it is one primary-key lookup.
 */
import type { Db } from './database.ts';
import { prepare } from './entity-table.ts';

export type VersionedTable = 'services' | 'configs' | 'config_types' | 'identities' | 'api_sessions' | 'auth_policies' | 'api_session_activity' | 'routers';

/** The current counters of `tables`, as one string (compare with `===`). */
export function tableVersions(db: Db, tables: readonly VersionedTable[]): () => string {
  // One scalar subquery per counter: about half the cost of an IN list with group_concat (a per-request read).
  const sql = `SELECT ${tables.map(() => '(SELECT version FROM table_versions WHERE name = ?)').join(" || '.' || ")}`;
  return () => {
    const v = prepare(db, sql).pluck().get(...tables) as string | null;
    if (v === null) throw new Error(`unversioned table among ${tables.join(', ')}`);
    return v;
  };
}
