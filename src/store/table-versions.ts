/**
 * Per-table change counters (migration 0022): triggers bump a table's counter in the transaction of every
 * committed change, whichever process made it. A per-process read cache keeps the counter it was built at
 * and is current exactly while the stored counter is unchanged; reading it is one primary-key lookup.
 */
import type { Db } from './database.ts';
import { prepare } from './entity-table.ts';
import type { VersionedTable } from './store.ts';

export type { VersionedTable };

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

/**
 * A value built from the store (`build`), kept while the counters of `tables` stand and rebuilt at the first
 * read after they moved. The counters and the rows are read in one read transaction, so the value is exactly the
 * state its counters name. Inside a write transaction a counter may be rolled back and later reached again by
 * other content, so a value built there is returned but not kept.
 */
export function versionedValue<T>(db: Db, tables: readonly VersionedTable[], build: () => T): () => T {
  const version = tableVersions(db, tables);
  let kept: { value: T; at: string } | undefined;
  return () => {
    if (db.inTransaction) return build();
    if (kept === undefined || kept.at !== version()) {
      kept = db.transaction(() => ({ at: version(), value: build() }))();
    }
    return kept.value;
  };
}
