/**
 * Moves a controller from its embedded SQLite store to PostgreSQL: every row of every table, read in one SQLite
 * read transaction (a consistent state) and written in one PostgreSQL transaction (all or nothing), parents before
 * children. The target must be an empty database: its schema is created by the PostgreSQL migrations, at the same
 * version as the source's, and the rows the migrations seed are replaced by the source's. Rows the target's triggers
 * add while copying (change counters, change feed) are replaced by the source's too, and identity sequences continue
 * after the copied values. The PKI stays in the data dir, which the controller keeps using on PostgreSQL.
 */
import type { Db } from './database.ts';
import { migrate } from './migrate.ts';
import type { Store, Tx } from './store.ts';

export interface CopyReport {
  /** Rows copied per table, in copy order. */
  tables: Array<{ table: string; rows: number }>;
  schemaVersion: number;
}

/** Tables kept by the target's triggers (change counters, change feed) while the others are copied. */
const TRIGGER_KEPT = ['table_versions', 'change_feed', 'change_feed_trim'];

/** Rows per INSERT statement (PostgreSQL binds at most 65535 parameters in one). */
const BATCH_PARAMETERS = 30_000;

/** Tables in an order where every table comes after the tables it references. */
export function copyOrder(db: Db): string[] {
  const tables = db
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .pluck()
    .all() as string[];
  const parents = new Map<string, Set<string>>();
  for (const t of tables) {
    const refs = db.prepare('SELECT "table" FROM pragma_foreign_key_list(?)').pluck().all(t) as string[];
    parents.set(t, new Set(refs.filter((r) => r !== t)));
  }
  const ordered: string[] = [];
  const placed = new Set<string>();
  const visit = (t: string, path: Set<string>) => {
    if (placed.has(t)) return;
    if (path.has(t)) throw new Error(`foreign keys form a cycle through ${t}`);
    path.add(t);
    for (const p of parents.get(t) ?? []) visit(p, path);
    path.delete(t);
    placed.add(t);
    ordered.push(t);
  };
  for (const t of tables) visit(t, new Set());
  return ordered;
}

async function targetColumns(tx: Tx, table: string): Promise<Map<string, string>> {
  const rows = await tx.all<{ column_name: string; data_type: string }>(
    "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
    [table],
  );
  return new Map(rows.map((r) => [r.column_name, r.data_type]));
}

/** A SQLite value as the PostgreSQL column takes it (BLOBs as bytea, everything else as bound). */
function convert(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * What went wrong, on one line: the driver's own message for a store fault (a STORAGE_UNAVAILABLE error keeps it as
 * `reason`; its message speaks of a controller's disk), else the error's message.
 */
function reasonOf(err: unknown): string {
  const reason = (err as { reason?: unknown } | undefined)?.reason;
  const text = typeof reason === 'string' ? reason : err instanceof Error ? err.message : String(err);
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Copies `source` (a SQLite connection; the controller using it must be stopped) into `target` (an empty
 * PostgreSQL store). `migrateTarget` creates the target's schema; it is called only once the target was found empty.
 */
export async function copySqliteToStore(
  source: Db,
  target: Store,
  migrateTarget: (store: Store) => Promise<unknown>,
  progress: (table: string, rows: number) => void = () => undefined,
): Promise<CopyReport> {
  if (target.kind !== 'postgres') throw new Error('the target of a copy must be a PostgreSQL store');
  const existing = await target.value<number>(
    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
  );
  if ((existing ?? 0) > 0) throw new Error('the target database is not empty (it has tables); copy into a new, empty database');
  migrate(source);
  const version = source.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get() as number;
  await migrateTarget(target);
  const targetVersion = await target.value<number>('SELECT MAX(version) FROM schema_migrations');
  if (targetVersion !== version) throw new Error(`schema versions differ: SQLite ${version}, PostgreSQL ${targetVersion}`);

  const order = copyOrder(source).filter((t) => t !== 'schema_migrations');
  // Tables the target's triggers write while the other tables are copied: copied last, after what the triggers added
  // is removed (copied in turn, the source's change-feed rows would collide with the ones the triggers numbered).
  const kept = TRIGGER_KEPT.filter((t) => order.includes(t));
  const report: CopyReport = { tables: [], schemaVersion: version };

  async function copyTable(tx: Tx, table: string): Promise<void> {
    const columns = await targetColumns(tx, table);
    if (columns.size === 0) throw new Error(`table ${table} is missing on PostgreSQL`);
    const sourceColumns = source.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[];
    for (const c of sourceColumns) if (!columns.has(c)) throw new Error(`column ${table}.${c} is missing on PostgreSQL`);
    const batch = Math.max(1, Math.floor(BATCH_PARAMETERS / sourceColumns.length));
    const names = sourceColumns.map((c) => `"${c}"`).join(', ');
    const rowMarks = `(${sourceColumns.map(() => '?').join(', ')})`;
    const rows = source.prepare(`SELECT ${names} FROM "${table}"`).raw(true).iterate() as IterableIterator<unknown[]>;
    let pending: unknown[][] = [];
    let count = 0;
    const flush = async () => {
      if (pending.length === 0) return;
      try {
        await tx.run(`INSERT INTO "${table}" (${names}) VALUES ${pending.map(() => rowMarks).join(', ')}`, pending.flat().map(convert));
      } catch (err) {
        throw new Error(`rows of ${table}: ${reasonOf(err)}`, { cause: err });
      }
      count += pending.length;
      pending = [];
    };
    for (const row of rows) {
      pending.push(row);
      if (pending.length >= batch) await flush();
    }
    await flush();
    report.tables.push({ table, rows: count });
    progress(table, count);
  }

  source.exec('BEGIN');
  try {
    await target.write(async (tx) => {
      // Children first: the rows the migrations seeded (and any a trigger adds) give way to the source's.
      for (const table of [...order].reverse()) await tx.run(`DELETE FROM "${table}"`);
      for (const table of order) if (!kept.includes(table)) await copyTable(tx, table);
      for (const table of kept) {
        await tx.run(`DELETE FROM "${table}"`);
        await copyTable(tx, table);
      }
      // Identity columns continue after the copied values.
      const identities = await tx.all<{ table_name: string; column_name: string }>(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_identity = 'YES'",
      );
      for (const { table_name, column_name } of identities) {
        await tx.run(
          `SELECT setval(pg_get_serial_sequence(CAST(? AS TEXT), CAST(? AS TEXT)), GREATEST(COALESCE((SELECT MAX("${column_name}") FROM "${table_name}"), 0), 1), (SELECT COUNT(*) > 0 FROM "${table_name}"))`,
          [`"${table_name}"`, column_name],
        );
      }
    });
  } catch (err) {
    // The schema stays (migrations commit on their own), so the database is no longer empty for a second attempt.
    throw new Error(`the copy failed and nothing was copied (${reasonOf(err)}); the target now holds an empty schema: drop and re-create the database before trying again`, { cause: err });
  } finally {
    if (source.inTransaction) source.exec('COMMIT');
  }
  return report;
}
