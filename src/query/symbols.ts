/**
 * The contract between the filter compiler and a resource: which names a filter may use, their types,
 * and where each lives in SQL. The compiler never knows about resources; a resource hands it a
 * SymbolTable built from its declaration. SQL fragments given here are written by the project (column
 * names, constant table names), never taken from user input.
 */

/** Scalar value types of the filter language. `int`/`float` both behave as "number" on the wire. */
export type ScalarType = 'string' | 'int' | 'float' | 'bool' | 'datetime';

/** What every symbol may say about itself beside its storage. */
interface SymbolCommon {
  /**
   * Listed in `meta.filterableFields` (default true). `false` keeps a field a filter may use out of the list,
   * where upstream does not list it: the list shows what upstream offers, the filter accepts a little more.
   */
  advertised?: boolean;
}

/** A plain field stored in one SQL expression of the row (e.g. `e.name`). */
export interface ScalarSymbol extends SymbolCommon {
  kind: 'scalar';
  type: ScalarType;
  /** SQL expression that yields the value for the current row, e.g. `e.name`. */
  sql: string;
  /** The same expression for PostgreSQL, where `sql` uses what only SQLite has (e.g. JSON paths). */
  postgresSql?: string;
  /** May appear in `sort by` (plain non-set fields of the entity itself). Default true. */
  sortable?: boolean;
  /**
   * Values are unique and never NULL (a `NOT NULL UNIQUE` column): a sort by this field is already a total
   * order, so later sort terms and the id tie-breaker are left out — same rows, same order, and an index on
   * the column alone can serve the sort.
   */
  unique?: boolean;
}

/**
 * A set-valued field (role attributes, policy role lists...) stored as rows of a side table:
 * `SELECT <valueColumn> FROM <table> WHERE <ownerColumn> = <row id> [AND <where>]`.
 * Usable only inside anyOf/allOf/count/isEmpty.
 */
export interface SetSymbol extends SymbolCommon {
  kind: 'set';
  elementType: ScalarType;
  table: string;
  /** The same source for PostgreSQL, where `table` uses what only SQLite has (e.g. `json_each`). */
  postgresTable?: string;
  ownerColumn: string;
  valueColumn: string;
  /** Constant SQL restricting the side table (e.g. `entity_type = 'identities'`). */
  where?: string;
}

/** A map of scalar values stored as a JSON object column (e.g. `tags`); `tags.<key>` has type "any". */
export interface MapSymbol extends SymbolCommon {
  kind: 'map';
  /** SQL expression of the JSON text column, e.g. `e.tags`. */
  sql: string;
}

export type FieldSymbol = ScalarSymbol | SetSymbol | MapSymbol;

/**
 * Everything the compiler needs to know about one list: the alias-qualified id expression used to
 * correlate set sub-queries and as the sort tie-breaker, and the public symbols by name.
 */
export interface SymbolTable {
  /** SQL expression of the row id, e.g. `e.id`. */
  idSql: string;
  symbols: Record<string, FieldSymbol>;
}

/** The advertised field names, in the order they were declared (what `meta.filterableFields` shows). */
export function filterableFields(table: SymbolTable): string[] {
  return Object.entries(table.symbols).filter(([, symbol]) => symbol.advertised !== false).map(([name]) => name);
}

const postgresTables = new WeakMap<SymbolTable, SymbolTable>();

/** The table with each symbol's SQL for `dialect` (the PostgreSQL forms where a symbol has them). */
export function symbolsFor(table: SymbolTable, dialect: string): SymbolTable {
  if (dialect !== 'postgres') return table;
  let mapped = postgresTables.get(table);
  if (!mapped) {
    const symbols: Record<string, FieldSymbol> = {};
    for (const [name, s] of Object.entries(table.symbols)) {
      if (s.kind === 'scalar' && s.postgresSql !== undefined) symbols[name] = { ...s, sql: s.postgresSql };
      else if (s.kind === 'set' && s.postgresTable !== undefined) symbols[name] = { ...s, table: s.postgresTable };
      else symbols[name] = s;
    }
    postgresTables.set(table, (mapped = { ...table, symbols }));
  }
  return mapped;
}
