/**
 * The router data model's change sets in the store (table `rdm_change_sets`, migration 0040), for controllers
 * sharing one PostgreSQL store. The network's leader builds each change set once (router-data-model.ts) and
 * appends it here; every other controller reads the sets from here instead of building its own. Every controller
 * therefore sends the same sets under the same indexes, and a router that moves its subscription from one
 * controller to another is sent the sets it misses, not a full state.
 *
 * The log is a chain: each row names the index before it (`prev_idx`, unique), so two processes that both think
 * they lead cannot both append after the same set: the second append fails and that process stops building. A row
 * without a body is a restart of the chain: a new leader's model starts at the feed's head, and what the old leader
 * built no set for between the last set and that head cannot be told as a change; a router behind such a row gets
 * the full state.
 */
import type { Store, Sql } from '../../store/store.ts';

export interface LoggedChangeSet {
  index: bigint;
  previousIndex: bigint;
  firstSeq: bigint;
  /** The encoded changes; undefined for a restart of the chain. */
  changes?: Buffer;
  /** When it was appended (ms since the epoch). */
  at: number;
}

export interface ChangeSetLog {
  /** Whether this process builds the sets (the network's leader); the others read them. */
  leads(): boolean;
  /** The newest row's index, or undefined when the log is empty. */
  head(q?: Sql): Promise<bigint | undefined>;
  /** Appends a set after `previousIndex`; false when another row already follows it (another builder). */
  append(set: { index: bigint; previousIndex: bigint; firstSeq: bigint; changes: Buffer }): Promise<boolean>;
  /** Appends a restart of the chain at `index`; false when another row already follows `previousIndex`. */
  restart(index: bigint, previousIndex: bigint): Promise<boolean>;
  /** The rows after `index`, oldest first, at most `limit`. */
  after(index: bigint, limit?: number): Promise<LoggedChangeSet[]>;
  /**
   * The newest rows of the current chain (after its last restart), oldest first, at most `limit`: what a controller
   * that starts reading can replay to routers.
   */
  recent(limit: number): Promise<LoggedChangeSet[]>;
  /** Drops rows older than `cutoff` (ISO time), always keeping the newest. */
  trim(cutoff: string): Promise<number>;
}

interface Row {
  idx: number | string;
  prev_idx: number | string;
  first_seq: number | string;
  body: string | null;
  created_at: string;
}

function rowOf(row: Row): LoggedChangeSet {
  return {
    index: BigInt(row.idx),
    previousIndex: BigInt(row.prev_idx),
    firstSeq: BigInt(row.first_seq),
    ...(row.body === null ? {} : { changes: Buffer.from(row.body, 'base64') }),
    at: Date.parse(row.created_at),
  };
}

export function createChangeSetLog(store: Store, leads: () => boolean): ChangeSetLog {
  async function insert(index: bigint, previousIndex: bigint, firstSeq: bigint, body: string | null): Promise<boolean> {
    return store.write(async (tx) => {
      const taken = await tx.value('SELECT idx FROM rdm_change_sets WHERE prev_idx = ? OR idx = ?', [String(previousIndex), String(index)]);
      if (taken !== undefined) return false;
      const head = await tx.value<number | string>('SELECT MAX(idx) FROM rdm_change_sets');
      // Only after the newest row: a builder behind the head lost its place (another one appended meanwhile).
      if (head !== undefined && head !== null && BigInt(head) !== previousIndex) return false;
      await tx.run('INSERT INTO rdm_change_sets (idx, prev_idx, first_seq, body, created_at) VALUES (?, ?, ?, ?, ?)', [
        String(index),
        String(previousIndex),
        String(firstSeq),
        body,
        new Date().toISOString(),
      ]);
      return true;
    });
  }

  return {
    leads,
    async head(q: Sql = store) {
      const value = await q.value<number | string | null>('SELECT MAX(idx) FROM rdm_change_sets');
      return value === undefined || value === null ? undefined : BigInt(value);
    },
    append: (set) => insert(set.index, set.previousIndex, set.firstSeq, set.changes.toString('base64')),
    restart: (index, previousIndex) => insert(index, previousIndex, index, null),
    async after(index, limit = 1000) {
      const rows = await store.all<Row>('SELECT * FROM rdm_change_sets WHERE idx > ? ORDER BY idx LIMIT ?', [String(index), limit]);
      return rows.map(rowOf);
    },
    async recent(limit) {
      const rows = await store.all<Row>('SELECT * FROM rdm_change_sets ORDER BY idx DESC LIMIT ?', [limit]);
      const out: LoggedChangeSet[] = [];
      for (const row of rows) {
        const set = rowOf(row);
        out.push(set);
        if (!set.changes) break;
      }
      return out.reverse();
    },
    async trim(cutoff) {
      return store.write(async (tx) => {
        const head = await tx.value<number | string | null>('SELECT MAX(idx) FROM rdm_change_sets');
        if (head === undefined || head === null) return 0;
        return (await tx.run('DELETE FROM rdm_change_sets WHERE created_at < ? AND idx < ?', [cutoff, String(head)])).changes;
      });
    },
  };
}
