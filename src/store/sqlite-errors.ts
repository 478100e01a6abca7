/**
 * The only place that knows the engines' constraint errors: UNIQUE and FOREIGN KEY violations, from SQLite
 * (better-sqlite3's `SQLITE_CONSTRAINT_*` codes) or PostgreSQL (SQLSTATE 23505 and 23503), become the upstream
 * API errors a client expects, the same for both. Anything else is rethrown unchanged (and ends as a 500).
 */
import { ApiError, fieldError } from '../errors.ts';
import type { EntityTableDecl, Values } from './entity-table.ts';

interface ConstraintErrorLike {
  code?: string;
  message?: string;
  /** PostgreSQL: `Key (col1, col2)=(v1, v2) already exists.` */
  detail?: string;
  /** PostgreSQL: the violated constraint or unique index, e.g. `identities_name_key`. */
  constraint?: string;
  table?: string;
}

const PG_UNIQUE_VIOLATION = '23505';
const PG_FOREIGN_KEY_VIOLATION = '23503';

/** A UNIQUE (or primary key) violation, on either engine. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as ConstraintErrorLike | undefined)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === PG_UNIQUE_VIOLATION;
}

/** A FOREIGN KEY violation (a missing parent, or a delete of a referenced row), on either engine. */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = (err as ConstraintErrorLike | undefined)?.code;
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === PG_FOREIGN_KEY_VIOLATION;
}

/** Any constraint violation (unique, foreign key, check, not null), on either engine. */
export function isConstraintViolation(err: unknown): boolean {
  const code = (err as ConstraintErrorLike | undefined)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CONSTRAINT') || /^23\d{3}$/.test(code));
}

function fieldForColumn(decl: EntityTableDecl, column: string): string {
  for (const [field, c] of Object.entries(decl.columns)) if (c.column === column) return field;
  return column;
}

/** The columns of a violated unique constraint, in index order. */
function uniqueColumns(e: ConstraintErrorLike, decl: EntityTableDecl): string[] {
  if (e.code !== PG_UNIQUE_VIOLATION) {
    // SQLite's message: "UNIQUE constraint failed: <table>.<column>[, <table>.<column>]"
    return (e.message ?? '').replace(/^.*failed: /, '').split(',').map((s) => s.trim().split('.').pop() ?? '');
  }
  // PostgreSQL's detail names the key's columns (plain columns: the schema has no expression index).
  const key = /^Key \((.+?)\)=\(/.exec(e.detail ?? '');
  if (key) return key[1]!.split(',').map((s) => s.trim().replace(/^"(.*)"$/, '$1'));
  // No detail (a role without SELECT on the table gets none): the default constraint names, <table>_pkey and
  // <table>_<col>_key, else the declared column the name ends with.
  const name = e.constraint ?? '';
  if (name === `${decl.table}_pkey`) return ['id'];
  const columns = ['id', ...Object.values(decl.columns).map((c) => c.column)].sort((a, b) => b.length - a.length);
  const found = columns.find((c) => name === `${decl.table}_${c}_key` || name.endsWith(`_${c}_key`) || name.endsWith(`_${c}`));
  return [found ?? name];
}

export function mapConstraintError(err: unknown, decl: EntityTableDecl, values: Values): unknown {
  const e = err as ConstraintErrorLike;
  if (isUniqueViolation(e)) {
    const columns = uniqueColumns(e, decl);
    const field = fieldForColumn(decl, columns[0] === 'id' ? 'id' : columns[columns.length - 1]!);
    const value = values[field];
    if (field === 'name') return fieldError('name', 'name must be unique', value);
    return fieldError(field, `duplicate value '${String(value)}' in unique index on ${decl.entityType} store`, value);
  }
  if (isForeignKeyViolation(e)) {
    if (Object.keys(values).length === 1 && 'id' in values) {
      return new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
        cause: { code: 'UNHANDLED', message: `${decl.singular} with id ${String(values.id)} is referenced by other records` },
      });
    }
    return new ApiError('REFERENCED_ENTITY_NOT_FOUND', { cause: { code: 'UNHANDLED', message: 'a referenced entity does not exist' } });
  }
  return err;
}
