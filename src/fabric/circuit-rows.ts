/**
 * The `circuits` rows of this process, written in batches: circuits come and go at network speed, and on a store
 * across the network (PostgreSQL) one statement per circuit would cost a round trip and a commit each. Up to four
 * batches are written at once; rows asked for while that many are under way wait and then go together: one multi-row INSERT for the
 * circuits created, then one DELETE for those ended (in that order, so a circuit created and ended in the same
 * batch is added, then removed, and the change feed shows both). Each caller's promise settles when its batch
 * has committed (or failed: every caller of a failed batch gets its error). With nothing in flight a row is
 * written at once, so on the embedded store (where a write takes microseconds) batches are mostly of one.
 */
import type { Store } from '../store/store.ts';

export interface CircuitRow {
  id: string;
  owner: string;
  sessionId: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  terminatorId: string;
  path: readonly string[];
  links: readonly string[];
  createdAt: Date;
}

/** Rows per statement: 10 parameters each, far below either engine's limit. */
const MAX_BATCH = 200;
/** Batches written at once (each on its own connection on PostgreSQL); more rows wait and go in the next. */
const MAX_IN_FLIGHT = 2;
const COLUMNS = '(id, owner, session_id, api_session_id, identity_id, service_id, terminator_id, path, links, created_at)';

interface Pending {
  inserts: CircuitRow[];
  deletes: string[];
  waiters: Array<{ resolve: () => void; reject: (err: unknown) => void }>;
}

export function createCircuitRows(store: Pick<Store, 'runRuntime'>, maxInFlight = MAX_IN_FLIGHT) {
  let pending: Pending | undefined;
  let inFlight = 0;
  /** Inserts not yet settled, by circuit: a removal waits for its circuit's insert (batches run side by side). */
  const inserting = new Map<string, Promise<void>>();

  function enqueue(add: (batch: Pending) => void): Promise<void> {
    pending ??= { inserts: [], deletes: [], waiters: [] };
    add(pending);
    const done = new Promise<void>((resolve, reject) => pending!.waiters.push({ resolve, reject }));
    pump();
    return done;
  }

  function pump(): void {
    while (pending && inFlight < maxInFlight) {
      const batch = pending;
      pending = undefined;
      inFlight += 1;
      void writeBatch(batch)
        .then(
          () => batch.waiters.forEach((w) => w.resolve()),
          (err: unknown) => batch.waiters.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          inFlight -= 1;
          pump();
        });
    }
  }

  async function writeBatch(batch: Pending): Promise<void> {
    for (let i = 0; i < batch.inserts.length; i += MAX_BATCH) {
      const rows = batch.inserts.slice(i, i + MAX_BATCH);
      const params = rows.flatMap((r) => [
        r.id,
        r.owner,
        r.sessionId,
        r.apiSessionId,
        r.identityId,
        r.serviceId,
        r.terminatorId,
        JSON.stringify(r.path),
        JSON.stringify(r.links),
        r.createdAt.toISOString(),
      ]);
      await store.runRuntime(`INSERT INTO circuits ${COLUMNS} VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`, params);
    }
    for (let i = 0; i < batch.deletes.length; i += MAX_BATCH) {
      const ids = batch.deletes.slice(i, i + MAX_BATCH);
      await store.runRuntime(`DELETE FROM circuits WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);
    }
  }

  return {
    /** Records a circuit routed by this process. */
    insert(row: CircuitRow): Promise<void> {
      const done = enqueue((b) => b.inserts.push(row));
      inserting.set(row.id, done);
      const settled = () => {
        if (inserting.get(row.id) === done) inserting.delete(row.id);
      };
      done.then(settled, settled);
      return done;
    },
    /** Removes an ended circuit's row (after its insert, if that is still being written). */
    async remove(id: string): Promise<void> {
      await inserting.get(id)?.catch(() => undefined);
      return enqueue((b) => b.deletes.push(id));
    },
  };
}

export type CircuitRows = ReturnType<typeof createCircuitRows>;
