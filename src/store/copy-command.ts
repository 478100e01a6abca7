/**
 * `portcullis copy-to-postgres --data-dir DIR --database-url URL`: copies a stopped controller's SQLite store into
 * an empty PostgreSQL database (copy-store.ts). Afterwards start the controller with the same data dir (it keeps the
 * PKI) and `--database-url URL`.
 */
import { Command, CommanderError } from 'commander';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkDatabaseUrl, withoutPasswords } from '../config.ts';
import { openDatabase, closeDatabase } from './database.ts';
import { copySqliteToStore } from './copy-store.ts';
import { migrateStore } from './open-store.ts';


export async function copyToPostgres(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const program = new Command('portcullis copy-to-postgres')
    .description('copy a stopped controller\'s embedded SQLite store into an empty PostgreSQL database')
    .option('--data-dir <dir>', 'data directory of the controller to copy', env.PORTCULLIS_DATA_DIR ?? './data')
    // No default from the environment here: commander would show it (password and all) in --help.
    .option('--database-url <url>', 'the empty PostgreSQL database (postgres://USER:PASSWORD@HOST:PORT/DATABASE); default: PORTCULLIS_DATABASE_URL')
    .allowExcessArguments(false)
    // Commander's own error lines repeat what was typed (`--misspelt-option=URL`): they are reported once, below,
    // without passwords.
    .configureOutput({ outputError: () => undefined })
    .exitOverride();
  try {
    program.parse(argv, { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    if (err.exitCode === 0) return; // --help: printed
    throw new Error(withoutPasswords(err.message));
  }
  const o = program.opts<{ dataDir: string; databaseUrl?: string }>();
  const databaseUrl = o.databaseUrl ?? (env.PORTCULLIS_DATABASE_URL || undefined);
  if (!databaseUrl) throw new Error('copy-to-postgres needs --database-url (or PORTCULLIS_DATABASE_URL)');
  checkDatabaseUrl(databaseUrl);
  const file = join(resolve(o.dataDir), 'portcullis.db');
  if (!existsSync(file)) throw new Error(`no SQLite store in ${resolve(o.dataDir)} (portcullis.db is missing)`);
  const { openPostgresStore } = await import('./postgres/postgres-store.ts');
  const source = openDatabase(file);
  try {
    const target = await openPostgresStore(databaseUrl);
    try {
      const started = Date.now();
      const report = await copySqliteToStore(source, target, migrateStore);
      const rows = report.tables.reduce((n, t) => n + t.rows, 0);
      for (const t of report.tables) if (t.rows > 0) console.log(`${t.table}: ${t.rows}`);
      console.log(`copied ${rows} rows of ${report.tables.length} tables (schema version ${report.schemaVersion}) in ${Date.now() - started} ms`);
      console.log(`start the controller with --data-dir ${resolve(o.dataDir)} --database-url <the same URL>`);
    } finally {
      await target.close();
    }
  } finally {
    closeDatabase(source);
  }
}
