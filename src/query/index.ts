/**
 * Public entry of the filter compiler: a list request's `filter`, `sort`, `limit` and `offset` → the
 * WHERE text with its parameters, the ORDER BY text and the effective page. The pipeline is
 * lexer → parser → check (symbols, then types) → to-sql; see README.md for the language itself.
 * Everything here throws ApiError INVALID_FILTER, except a bad `sort` parameter (INVALID_SORT_IDENTIFIER).
 */
import { ApiError } from '../errors.ts';
import { checkQuery } from './check.ts';
import { sqliteDialect, type Dialect } from './dialect.ts';
import { orderBySql } from './order-by.ts';
import { resolvePaging } from './paging.ts';
import { parseFilter } from './parser.ts';
import { symbolsFor, type SymbolTable } from './symbols.ts';
import { conditionToSql } from './to-sql.ts';
import type { SortTerm } from './typed.ts';

export { sqliteDialect, type Dialect } from './dialect.ts';
export { DEFAULT_LIMIT, MAX_INT64_TEXT, MAX_LIMIT, MAX_OFFSET } from './paging.ts';
export type { FieldSymbol, MapSymbol, ScalarSymbol, ScalarType, SetSymbol, SymbolTable } from './symbols.ts';

export interface ListParams {
  filter?: string;
  sort?: string;
  limit?: number;
  offset?: number;
}

export interface CompiledQuery {
  /**
   * Condition for `WHERE` (without the keyword); `?` placeholders bound from `params` in order. It may be
   * NULL for a row that does not match (keeps plain comparisons index-friendly): AND it with other
   * conditions freely, but never negate it.
   */
  where: string;
  params: unknown[];
  /** SQL after `ORDER BY` (without the keyword); always ends with the id so paging is stable. */
  orderBy: string;
  /** Page size; -1 when `unlimited`. */
  limit: number;
  offset: number;
  /** `limit none` or `limit=-1`: return every row (meta shows MAX_INT64_TEXT as the limit). */
  unlimited: boolean;
}

export function compileListQuery(declared: SymbolTable, params: ListParams, dialect: Dialect = sqliteDialect): CompiledQuery {
  const table = symbolsFor(declared, dialect.name);
  // An empty or missing filter means `true`; whitespace alone is a syntax error, as upstream.
  const checked = checkQuery(parseFilter(params.filter || 'true'), table);
  const sort = checked.sort.length > 0 || !params.sort ? checked.sort : sortFromParameter(params.sort, table);
  const { where, params: sqlParams } = conditionToSql(checked.condition, table, dialect);
  return {
    where,
    params: sqlParams,
    orderBy: orderBySql(sort, table.idSql, dialect),
    ...resolvePaging(checked, params),
  };
}

/** The `sort` parameter, read as upstream does: `true sort by <sort>`, keeping only the sort fields. */
function sortFromParameter(sort: string, table: SymbolTable): SortTerm[] {
  try {
    return checkQuery(parseFilter(`true sort by ${sort}`), table).sort;
  } catch (error) {
    if (error instanceof ApiError && error.code === 'INVALID_FILTER') {
      throw new ApiError('INVALID_SORT_IDENTIFIER', { cause: error.cause });
    }
    throw error;
  }
}
