/**
 * The only place that knows SQLite's constraint errors: UNIQUE and FOREIGN KEY violations become the
 * upstream API errors a client expects. Anything else is rethrown unchanged (and ends as a 500).
 */
import { ApiError, fieldError } from '../errors.ts';
import type { EntityTableDecl, Values } from './entity-table.ts';

interface SqliteErrorLike {
  code?: string;
  message?: string;
}

function fieldForColumn(decl: EntityTableDecl, column: string): string {
  for (const [field, c] of Object.entries(decl.columns)) if (c.column === column) return field;
  return column;
}

export function mapConstraintError(err: unknown, decl: EntityTableDecl, values: Values): unknown {
  const e = err as SqliteErrorLike;
  if (e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    // Message shape: "UNIQUE constraint failed: <table>.<column>[, <table>.<column>]"
    const columns = (e.message ?? '').replace(/^.*failed: /, '').split(',').map((s) => s.trim().split('.').pop() ?? '');
    const field = fieldForColumn(decl, columns[0] === 'id' ? 'id' : columns[columns.length - 1]);
    const value = values[field];
    if (field === 'name') return fieldError('name', 'name must be unique', value);
    return fieldError(field, `duplicate value '${String(value)}' in unique index on ${decl.entityType} store`, value);
  }
  if (e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
    if (Object.keys(values).length === 1 && 'id' in values) {
      return new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
        cause: { code: 'UNHANDLED', message: `${decl.singular} with id ${String(values.id)} is referenced by other records` },
      });
    }
    return new ApiError('REFERENCED_ENTITY_NOT_FOUND', { cause: { code: 'UNHANDLED', message: 'a referenced entity does not exist' } });
  }
  return err;
}
