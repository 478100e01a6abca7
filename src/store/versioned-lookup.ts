/**
 * Values looked up by key (a row by its id, the rows of one service), kept in memory while the change counters of
 * `tables` stand and all dropped at the first lookup after they moved. On PostgreSQL the counters are read only
 * when the commit mark moved, so a lookup whose value is kept costs no round trip; on SQLite reading them is one
 * primary-key lookup.
 *
 * A value is kept only if no move of the counters was seen while it loaded (it may otherwise be older than the
 * counters it would be kept under). Absent values (undefined) are not kept, so keys nobody holds (a forged token)
 * fill nothing; at most `max` values are kept, and all are dropped when that is reached.
 */
import type { Store, VersionedTable } from './store.ts';

export function versionedLookup<K, V>(
  store: Pick<Store, 'versions'>,
  tables: readonly VersionedTable[],
  load: (key: K) => Promise<V | undefined>,
  max = 10_000,
): (key: K) => Promise<V | undefined> {
  const version = store.versions(tables);
  const kept = new Map<K, V>();
  let at: string | undefined;
  /** Moves with every drop: a load started before it is not kept. */
  let generation = 0;
  return async (key) => {
    const now = await version();
    if (now !== at) {
      at = now;
      kept.clear();
      generation += 1;
    }
    const hit = kept.get(key);
    if (hit !== undefined) return hit;
    const started = generation;
    const value = await load(key);
    if (value !== undefined && started === generation) {
      if (kept.size >= max) kept.clear();
      kept.set(key, value);
    }
    return value;
  };
}
