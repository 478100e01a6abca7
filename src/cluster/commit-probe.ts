/**
 * The SQLite dialect's cheap "has another connection committed?" counter for the change feed: `PRAGMA
 * data_version` changes whenever another connection (another worker process) commits, and costs no table
 * read. A PostgreSQL store has no such counter and passes none (the feed then asks for the newest seq).
 */
import type { Db } from '../store/database.ts';

export function sqliteCommitProbe(db: Db): () => unknown {
  const statement = db.prepare('PRAGMA data_version').pluck();
  return () => statement.get();
}
