/**
 * The only place that knows SQL-engine specifics. to-sql.ts composes portable SQL (AND/OR/NOT, EXISTS,
 * IN, comparisons, `?` placeholders) and asks a Dialect for everything else: boolean constants, NULL
 * folding, substring tests, case folding, number-to-text, JSON map access and NULL ordering. `sqliteDialect`
 * is the embedded store's, `postgresDialect` PostgreSQL's; both give the same answers on the same rows.
 *
 * SQLite contract: the store registers `pc_upper(text)` on every connection as JS `toUpperCase()` (the
 * same folding `upperLiteral` applies to the literal); it is never called with NULL. Booleans are stored
 * as INTEGER 0/1/NULL, datetimes as TEXT `YYYY-MM-DDTHH:MM:SS.mmmZ`, maps as JSON object TEXT.
 *
 * PostgreSQL contract: the same logical schema, so every comparison means the same: booleans as SMALLINT 0/1/NULL,
 * datetimes as the same TEXT (its order is time order), maps as JSONB. The database is UTF-8 with a `C.UTF-8`
 * collation, so `upper()` folds as JavaScript does except for the few letters that grow (`ß` stays `ß` where
 * JavaScript makes `SS`). Statements keep `?` placeholders; `positionalParameters` turns them into `$n`.
 */
import { param, sql, trusted, type Sql } from './sql.ts';

export type MapValueKind = 'text' | 'number' | 'bool';

export interface Dialect {
  readonly name: string;
  readonly trueSql: Sql;
  readonly falseSql: Sql;
  /** A predicate that may be NULL, made definite: NULL counts as `nullMeans`. */
  nullAs(predicate: Sql, nullMeans: boolean): Sql;
  /** A stored bool (0/1/NULL or a map bool) is true; absent counts as false. Never NULL. */
  isTrue(value: Sql): Sql;
  /** `haystack` contains `needle` as a substring (case-sensitive); NULL if either is NULL. */
  contains(haystack: Sql, needle: Sql): Sql;
  /** Unicode upper-casing of a text value in SQL (NULL stays NULL)… */
  upper(text: Sql): Sql;
  /** …and the same folding applied to a literal before it is bound. */
  upperLiteral(text: string): string;
  /** Decimal text of a stored number, as upstream compares numbers with strings. */
  numberAsText(value: Sql, type: 'int' | 'float'): Sql;
  /** A map key's value when its JSON type is `kind`, else NULL (absent keys included). */
  mapValue(map: Sql, keys: readonly string[], kind: MapValueKind): Sql;
  /** The map key is absent or holds JSON null. Never NULL. */
  mapKeyIsNull(map: Sql, keys: readonly string[]): Sql;
  /** One ORDER BY term: NULLs first when ascending, last when descending (upstream's order). */
  orderTerm(value: Sql, ascending: boolean): Sql;
  /** A literal of the filter (string, number, bigint), bound as a parameter. */
  literal(value: unknown): Sql;
  /** `column` is one of the strings of a JSON array bound as the one parameter `?`. */
  inJsonArray(column: string): string;
}

/** Map keys come from identifiers (`[A-Za-z][A-Za-z_-]*`); anything else is a programming error. */
const MAP_KEY = /^[A-Za-z][A-Za-z_-]*$/;

/** SQLite JSON path with every key quoted (`$."owner-team"`); bound as a parameter, never spliced. */
export function sqliteJsonPath(keys: readonly string[]): string {
  for (const key of keys) {
    if (!MAP_KEY.test(key)) throw new Error(`invalid map key: ${JSON.stringify(key)}`);
  }
  return `$${keys.map((key) => `."${key}"`).join('')}`;
}

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  inJsonArray: (column) => `${column} IN (SELECT value FROM json_each(?))`,
  trueSql: trusted('1'),
  falseSql: trusted('0'),
  nullAs: (predicate, nullMeans) => sql`COALESCE(${predicate}, ${trusted(nullMeans ? '1' : '0')})`,
  isTrue: (value) => sql`(COALESCE(${value}, 0) = 1)`,
  contains: (haystack, needle) => sql`(instr(${haystack}, ${needle}) > 0)`,
  // Guarded so the function never sees NULL: a JS toUpperCase would turn it into the text 'NULL'.
  upper: (text) => sql`(CASE WHEN ${text} IS NOT NULL THEN pc_upper(${text}) END)`,
  upperLiteral: (text) => text.toUpperCase(),
  numberAsText: (value, type) =>
    type === 'int'
      ? sql`CAST(${value} AS TEXT)`
      : // Go prints 2.0 as "2" where SQLite prints "2.0"; other floats use SQLite's shortest text.
        sql`(CASE WHEN ${value} = CAST(${value} AS INTEGER) THEN CAST(CAST(${value} AS INTEGER) AS TEXT) ELSE CAST(${value} AS TEXT) END)`,
  mapValue: (map, keys, kind) => {
    const path = sqliteJsonPath(keys);
    if (kind === 'bool') {
      return sql`(CASE json_type(${map}, ${param(path)}) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END)`;
    }
    const types = trusted(kind === 'text' ? "('text')" : "('integer', 'real')");
    return sql`(CASE WHEN json_type(${map}, ${param(path)}) IN ${types} THEN json_extract(${map}, ${param(path)}) END)`;
  },
  mapKeyIsNull: (map, keys) => sql`(COALESCE(json_type(${map}, ${param(sqliteJsonPath(keys))}), 'null') = 'null')`,
  orderTerm: (value, ascending) => sql`${value} ${trusted(ascending ? 'ASC' : 'DESC')}`,
  literal: (value) => sql`${param(value)}`,
};

/** PostgreSQL path of map keys, bound as a `text[]` parameter (`#>` / `#>>` take it), never spliced. */
function postgresJsonPath(keys: readonly string[]): string[] {
  for (const key of keys) {
    if (!MAP_KEY.test(key)) throw new Error(`invalid map key: ${JSON.stringify(key)}`);
  }
  return [...keys];
}

export const postgresDialect: Dialect = {
  name: 'postgres',
  inJsonArray: (column) => `${column} IN (SELECT jsonb_array_elements_text(CAST(? AS JSONB)))`,
  trueSql: trusted('TRUE'),
  falseSql: trusted('FALSE'),
  nullAs: (predicate, nullMeans) => sql`COALESCE(${predicate}, ${trusted(nullMeans ? 'TRUE' : 'FALSE')})`,
  isTrue: (value) => sql`(COALESCE(${value}, 0) = 1)`,
  contains: (haystack, needle) => sql`(strpos(${haystack}, ${needle}) > 0)`,
  upper: (text) => sql`upper(${text})`,
  upperLiteral: (text) => text.toUpperCase(),
  // float8's text is the shortest exact form, as Go prints it (2 for 2.0).
  numberAsText: (value) => sql`(${value})::text`,
  mapValue: (map, keys, kind) => {
    const path = param(postgresJsonPath(keys));
    const type = sql`jsonb_typeof(${map} #> ${path}::text[])`;
    if (kind === 'bool') return sql`(CASE ${type} WHEN 'boolean' THEN CASE WHEN (${map} #>> ${path}::text[]) = 'true' THEN 1 ELSE 0 END END)`;
    if (kind === 'text') return sql`(CASE WHEN ${type} = 'string' THEN ${map} #>> ${path}::text[] END)`;
    return sql`(CASE WHEN ${type} = 'number' THEN (${map} #>> ${path}::text[])::float8 END)`;
  },
  mapKeyIsNull: (map, keys) => sql`(COALESCE(jsonb_typeof(${map} #> ${param(postgresJsonPath(keys))}::text[]), 'null') = 'null')`,
  orderTerm: (value, ascending) => sql`${value} ${trusted(ascending ? 'ASC NULLS FIRST' : 'DESC NULLS LAST')}`,
  // Typed, so an int column compared with 10.5 compares as numbers (an untyped parameter takes the column's type).
  literal: (value) =>
    typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value))
      ? sql`${param(typeof value === 'bigint' ? value.toString() : value)}::bigint`
      : typeof value === 'number'
        ? sql`${param(value)}::float8`
        : sql`${param(value)}`,
};

/**
 * A statement with `?` placeholders as PostgreSQL takes it: `$1`, `$2`… in order. A `?` inside a quoted literal
 * or identifier stays as it is.
 */
export function positionalParameters(text: string): string {
  let n = 0;
  let quote: string | undefined;
  let out = '';
  for (const ch of text) {
    if (quote) {
      if (ch === quote) quote = undefined;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else out += ch === '?' ? `$${++n}` : ch;
  }
  return out;
}

/**
 * `<column> IN <set of ids>` with the set bound as one parameter (a JSON array), so lists computed in
 * memory (the access index's answers) can be filtered, sorted and paged by the compiled query.
 */
export function idSetCondition(column: string, ids: Iterable<string>, dialect: Dialect): { sql: string; params: unknown[] } {
  const list = Array.isArray(ids) ? (ids as string[]) : [...ids];
  if (list.length === 0) return { sql: '1 = 0', params: [] };
  return { sql: dialect.inJsonArray(column), params: [JSON.stringify(list)] };
}
