/**
 * An in-memory SQLite database shaped like a resource table, for running compiled filters for real: an
 * `items` table (with NULLs, tags of every JSON kind, a unicode name) and a `role_attributes` side table
 * holding two sets (role attributes and identity roles), plus the SymbolTable that describes them. Rows,
 * by id: a1 b2 c3 d4 e5 f6 g7 — the expected results in the tests are read off this data.
 */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pg from 'pg';
import { ApiError, type ErrorCode } from '../../../src/errors.ts';
import { compileListQuery, type CompiledQuery, type ListParams, type SymbolTable } from '../../../src/query/index.ts';
import { positionalParameters, postgresDialect } from '../../../src/query/dialect.ts';

export const table: SymbolTable = {
  idSql: 'e.id',
  symbols: {
    id: { kind: 'scalar', type: 'string', sql: 'e.id' },
    name: { kind: 'scalar', type: 'string', sql: 'e.name' },
    cost: { kind: 'scalar', type: 'int', sql: 'e.cost' },
    ratio: { kind: 'scalar', type: 'float', sql: 'e.ratio' },
    isAdmin: { kind: 'scalar', type: 'bool', sql: 'e.is_admin' },
    createdAt: { kind: 'scalar', type: 'datetime', sql: 'e.created_at' },
    updatedAt: { kind: 'scalar', type: 'datetime', sql: 'e.updated_at' },
    externalId: { kind: 'scalar', type: 'string', sql: 'e.external_id' },
    type: { kind: 'scalar', type: 'int', sql: 'e.type' },
    'service.name': { kind: 'scalar', type: 'string', sql: 'e.service_name' },
    secret: { kind: 'scalar', type: 'string', sql: 'e.secret', sortable: false },
    roleAttributes: {
      kind: 'set', elementType: 'string', table: 'role_attributes', ownerColumn: 'entity_id', valueColumn: 'attribute',
      where: "kind = 'attr'",
    },
    identityRoles: {
      kind: 'set', elementType: 'string', table: 'role_attributes', ownerColumn: 'entity_id', valueColumn: 'attribute',
      where: "kind = 'identity'",
    },
    tags: { kind: 'map', sql: 'e.tags' },
  },
};

type Row = [id: string, name: string | null, cost: number | null, ratio: number | null, isAdmin: 0 | 1 | null,
  createdAt: string | null, updatedAt: string | null, externalId: string | null, type: number | null,
  serviceName: string | null, tags: string | null, roles: string[], identityRoles?: string[]];

const ROWS: Row[] = [
  ['a1', 'alpha', 0, 0.5, 1, '2024-01-01T00:00:00.000Z', '2024-01-01T12:00:00.000Z', 'ext-1', 1, 'ssh',
    '{"env":"prod","owner-team":"core","flag":true}', ['sales', 'prod-eu'], ['#all']],
  ['b2', 'Beta', 10, 2.0, 0, '2024-01-15T10:30:00.500Z', '2024-01-02T00:00:00.000Z', null, 2, null,
    '{"env":"dev","flag":false,"replicas":3.0,"n":3}', ['eng'], ['@b2', '#sales']],
  ['c3', 'gamma web', 100, null, null, '2024-02-01T00:00:00.000Z', null, null, 2, null, '{"env":null,"flag":"true"}', []],
  ['d4', null, null, 10.25, 1, null, null, 'ext-4', null, null, null, ['prod-us', 'prod-eu']],
  ['e5', 'web-server', 99, -1.5, 0, '2023-12-31T23:59:59.999Z', '2024-01-01T23:59:59.999Z', 'x', 1, null, '{}', ['ops']],
  ['f6', 'école Zed', 5, 1.0, 1, '2024-01-31T23:59:59.999Z', '2024-03-01T00:00:00.000Z', null, 3, null,
    '{"env":"prod","owner-team":"edge"}', ['Sales']],
  ['g7', '10', 7, 100, 0, '2024-01-01T00:00:00.001Z', '2023-12-01T00:00:00.000Z', 'ext-7', 1, null, '{"env":"PROD"}', ['sales', 'eng']],
];

export const ALL_IDS = ROWS.map((row) => row[0]);

export function createDatabase(): Database.Database {
  const db = new Database(':memory:');
  // Registered exactly as the store does; to-sql must never hand it a NULL (it would return 'NULL').
  db.function('pc_upper', { deterministic: true }, (text: unknown) => String(text).toUpperCase());
  db.exec(`
    CREATE TABLE items (id TEXT PRIMARY KEY, name TEXT, cost INTEGER, ratio REAL, is_admin INTEGER, created_at TEXT,
      updated_at TEXT, external_id TEXT, type INTEGER, service_name TEXT, secret TEXT, tags TEXT);
    CREATE TABLE role_attributes (entity_id TEXT NOT NULL, kind TEXT NOT NULL, attribute TEXT NOT NULL);
  `);
  const insertItem = db.prepare('INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)');
  const insertRole = db.prepare('INSERT INTO role_attributes VALUES (?, ?, ?)');
  for (const [id, name, cost, ratio, isAdmin, createdAt, updatedAt, externalId, type, serviceName, tags, roles, identityRoles = []] of ROWS) {
    insertItem.run(id, name, cost, ratio, isAdmin, createdAt, updatedAt, externalId, type, serviceName, tags);
    for (const role of roles) insertRole.run(id, 'attr', role);
    for (const role of identityRoles) insertRole.run(id, 'identity', role);
  }
  return db;
}

/** Runs a compiled query the way a store would; `page: false` ignores limit/offset. */
export function runCompiled(db: Database.Database, compiled: CompiledQuery, page = true): string[] {
  const paging = page ? ` LIMIT ${compiled.unlimited ? -1 : compiled.limit} OFFSET ${compiled.offset}` : '';
  const statement = db.prepare(`SELECT id FROM items e WHERE ${compiled.where} ORDER BY ${compiled.orderBy}${paging}`);
  return statement.all(...compiled.params).map((row) => (row as { id: string }).id);
}

/** Ids matching a filter, every page, in the compiled order. */
export function matching(db: Database.Database, filter: string, params: Omit<ListParams, 'filter'> = {}): string[] {
  return runCompiled(db, compileListQuery(table, { ...params, filter }), false);
}

export function complementOf(ids: readonly string[]): string[] {
  return ALL_IDS.filter((id) => !ids.includes(id));
}

/** Asserts compileListQuery rejects the request with this error code and cause message. */
export function assertRejects(params: ListParams, code: ErrorCode, message: string): void {
  assert.throws(
    () => compileListQuery(table, params),
    (error: unknown) => {
      assert.ok(error instanceof ApiError, `expected ApiError, got ${String(error)}`);
      assert.equal(error.code, code);
      assert.deepEqual(error.cause, { code: 'UNHANDLED', message });
      return true;
    },
  );
}

/**
 * The same rows in a PostgreSQL database, in the schema postgresDialect expects (bools SMALLINT, datetimes TEXT,
 * maps JSONB), and the same ways to run compiled queries against them.
 */
export async function createPostgresFixture(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`
    CREATE TABLE items (id TEXT PRIMARY KEY, name TEXT, cost BIGINT, ratio DOUBLE PRECISION, is_admin SMALLINT, created_at TEXT,
      updated_at TEXT, external_id TEXT, type BIGINT, service_name TEXT, secret TEXT, tags JSONB);
    CREATE TABLE role_attributes (entity_id TEXT NOT NULL, kind TEXT NOT NULL, attribute TEXT NOT NULL);
  `);
  for (const [id, name, cost, ratio, isAdmin, createdAt, updatedAt, externalId, type, serviceName, tags, roles, identityRoles = []] of ROWS) {
    await client.query('INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11)', [
      id, name, cost, ratio, isAdmin, createdAt, updatedAt, externalId, type, serviceName, tags,
    ]);
    for (const role of roles) await client.query("INSERT INTO role_attributes VALUES ($1, 'attr', $2)", [id, role]);
    for (const role of identityRoles) await client.query("INSERT INTO role_attributes VALUES ($1, 'identity', $2)", [id, role]);
  }
  async function run(compiled: CompiledQuery, page = true): Promise<string[]> {
    const paging = page ? ` LIMIT ${compiled.unlimited ? 'ALL' : compiled.limit} OFFSET ${compiled.offset}` : '';
    const text = positionalParameters(`SELECT id FROM items e WHERE ${compiled.where} ORDER BY ${compiled.orderBy}${paging}`);
    const result = await client.query(text, compiled.params as unknown[]);
    return result.rows.map((row: { id: string }) => row.id);
  }
  return {
    client,
    run,
    compile: (params: ListParams) => compileListQuery(table, params, postgresDialect),
    matching: (filter: string, params: Omit<ListParams, 'filter'> = {}) => run(compileListQuery(table, { ...params, filter }, postgresDialect), false),
    close: () => client.end(),
  };
}
