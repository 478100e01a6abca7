/**
 * Typed condition → parameterised SQL WHERE text. Every literal becomes a `?` parameter; the only SQL text
 * spliced in comes from the SymbolTable, the Dialect and this file. Upstream treats a comparison with an
 * absent value as plainly false (true for `!=`, `not contains`), while SQL makes it NULL, and `NOT NULL` is
 * still NULL — so `not (x = 1)` would lose rows where x is NULL. Under a NOT every comparison is therefore
 * made definite (COALESCE). Where only truthiness matters (the top level, and/or under it, an EXISTS body)
 * NULL already acts as false, so false-on-NULL comparisons stay bare and indexes remain usable.
 * Sets are correlated sub-queries over their side table: anyOf → EXISTS, allOf → NOT EXISTS a failing
 * element (true when empty), count → COUNT(*), isEmpty → NOT EXISTS.
 */
import type { DatetimeValue } from './datetime.ts';
import type { Dialect } from './dialect.ts';
import { joinSql, sql, trusted, type Sql } from './sql.ts';
import type { ScalarType, SetSymbol, SymbolTable } from './symbols.ts';
import type { CompareOp, Condition, Family, Source, Value } from './typed.ts';

export interface WhereSql {
  where: string;
  params: unknown[];
}

interface Context {
  dialect: Dialect;
  idSql: string;
  /** The value column of the set element under test, inside anyOf/allOf. */
  element?: Sql;
  /** Numbers set-table aliases so nested sub-queries never collide. */
  aliases: { next: number };
  /** The result must be true/false, never NULL (we are under a NOT); otherwise NULL may stand for false. */
  definite: boolean;
}

/** Reading a source as a bool is only asked for by `isTrue`. */
type Reading = Family | 'bool';

export function conditionToSql(condition: Condition, table: SymbolTable, dialect: Dialect): WhereSql {
  const { text, params } = compile(condition, { dialect, idSql: table.idSql, aliases: { next: 1 }, definite: false });
  return { where: text, params: [...params] };
}

function compile(condition: Condition, ctx: Context): Sql {
  switch (condition.kind) {
    case 'constant':
      return condition.value ? ctx.dialect.trueSql : ctx.dialect.falseSql;
    case 'and':
      return sql`(${compile(condition.left, ctx)} AND ${compile(condition.right, ctx)})`;
    case 'or':
      return sql`(${compile(condition.left, ctx)} OR ${compile(condition.right, ctx)})`;
    case 'not':
      return sql`(NOT ${compile(condition.operand, { ...ctx, definite: true })})`;
    case 'compare':
      return compileCompare(condition, ctx);
    case 'in':
      return compileIn(condition, ctx);
    case 'between':
      return compileBetween(condition, ctx);
    case 'isNull':
      return compileIsNull(condition.source, ctx);
    case 'isTrue':
      return ctx.dialect.isTrue(readSource(condition.source, 'bool', ctx));
    case 'anyOf':
      return compileAnyOf(condition.set, condition.condition, ctx);
    case 'allOf':
      return compileAllOf(condition.set, condition.condition, ctx);
    case 'isEmpty':
      return sql`(NOT EXISTS (SELECT 1 ${setRows(condition.set, ctx).from}))`;
  }
}

// ---- sets --------------------------------------------------------------------------------------------

/** `FROM <table> AS <alias> WHERE <owner> = <row id> [AND (<where>)]`, plus the element's value column. */
function setRows(set: SetSymbol, ctx: Context): { from: Sql; element: Sql } {
  const alias = `pc_set${ctx.aliases.next++}`;
  const restriction = set.where ? ` AND (${set.where})` : '';
  return {
    from: trusted(`FROM ${set.table} AS ${alias} WHERE ${alias}.${set.ownerColumn} = ${ctx.idSql}${restriction}`),
    element: trusted(`${alias}.${set.valueColumn}`),
  };
}

function compileAnyOf(set: SetSymbol, condition: Condition, ctx: Context): Sql {
  const rows = setRows(set, ctx);
  const body = compile(condition, { ...ctx, element: rows.element, definite: false });
  return sql`EXISTS (SELECT 1 ${rows.from} AND ${body})`;
}

function compileAllOf(set: SetSymbol, condition: Condition, ctx: Context): Sql {
  const rows = setRows(set, ctx);
  const body = compile(condition, { ...ctx, element: rows.element, definite: true });
  return sql`(NOT EXISTS (SELECT 1 ${rows.from} AND (NOT ${body})))`;
}

// ---- reading values ----------------------------------------------------------------------------------

/** SQL for a source's value read in a family; NULL where upstream's value would be absent. */
function readSource(source: Source, reading: Reading, ctx: Context): Sql {
  switch (source.kind) {
    case 'column':
      return readStored(trusted(source.sql), source.type, reading, ctx);
    case 'element':
      return readStored(elementOf(ctx), source.type, reading, ctx);
    case 'count': {
      const count = sql`(SELECT COUNT(*) ${setRows(source.set, ctx).from})`;
      return reading === 'text' ? ctx.dialect.numberAsText(count, 'int') : count;
    }
    case 'tag': {
      const map = trusted(source.mapSql);
      // JSON has no datetime type, so a map value never compares as one (as upstream).
      if (reading === 'datetime') return trusted('NULL');
      return ctx.dialect.mapValue(map, source.keys, reading);
    }
  }
}

function elementOf(ctx: Context): Sql {
  if (!ctx.element) throw new Error('set element read outside anyOf/allOf');
  return ctx.element;
}

function readStored(value: Sql, type: ScalarType, reading: Reading, ctx: Context): Sql {
  if (reading === 'text' && (type === 'int' || type === 'float')) return ctx.dialect.numberAsText(value, type);
  return value;
}

function compileIsNull(source: Source, ctx: Context): Sql {
  switch (source.kind) {
    case 'tag':
      return ctx.dialect.mapKeyIsNull(trusted(source.mapSql), source.keys);
    case 'count':
      return ctx.dialect.falseSql;
    case 'column':
      return sql`(${trusted(source.sql)} IS NULL)`;
    case 'element':
      return sql`(${elementOf(ctx)} IS NULL)`;
  }
}

// ---- comparisons -------------------------------------------------------------------------------------

const NULL_MEANS_TRUE: ReadonlySet<CompareOp> = new Set(['!=', 'not contains']);

/** Gives a comparison that is NULL for an absent value the meaning upstream gives it. */
function settle(comparisonSql: Sql, nullMeans: boolean, ctx: Context): Sql {
  return nullMeans || ctx.definite ? ctx.dialect.nullAs(comparisonSql, nullMeans) : comparisonSql;
}

function compileCompare(condition: Condition & { kind: 'compare' }, ctx: Context): Sql {
  const { source, op, value, ignoreCase } = condition;
  const { dialect } = ctx;
  if (value.family === 'datetime') return compileDatetimeCompare(source, op, value.value, ctx);
  let left = readSource(source, value.family, ctx);
  let right = value.value;
  if (ignoreCase && typeof right === 'string') {
    left = dialect.upper(left);
    right = dialect.upperLiteral(right);
  }
  return settle(comparison(left, op, dialect.literal(right), dialect), NULL_MEANS_TRUE.has(op), ctx);
}

/** The bare comparison, NULL when the left side is NULL. */
function comparison(left: Sql, op: CompareOp, right: Sql, dialect: Dialect): Sql {
  switch (op) {
    case 'contains':
      return dialect.contains(left, sql`${right}`);
    case 'not contains':
      return sql`(NOT ${dialect.contains(left, sql`${right}`)})`;
    case '!=':
      return sql`(${left} <> ${right})`;
    default:
      return sql`(${left} ${trusted(op)} ${right})`;
  }
}

/**
 * Stored datetimes have whole milliseconds, so against a literal with a finer remainder `<`/`>=` use the
 * literal rounded up, `>`/`<=` rounded down, `=` never holds and `!=` always does.
 */
function compileDatetimeCompare(source: Source, op: CompareOp, value: DatetimeValue, ctx: Context): Sql {
  const { dialect } = ctx;
  if (!value.exact && op === '=') return dialect.falseSql;
  if (!value.exact && op === '!=') return dialect.trueSql;
  const bound = op === '<' || op === '>=' ? value.ceil : value.floor;
  return settle(comparison(readSource(source, 'datetime', ctx), op, dialect.literal(bound), dialect), NULL_MEANS_TRUE.has(op), ctx);
}

function compileIn(condition: Condition & { kind: 'in' }, ctx: Context): Sql {
  const { dialect } = ctx;
  const bound = condition.values.flatMap(boundForEquality);
  if (bound.length === 0) return dialect.falseSql;
  const left = readSource(condition.source, condition.family, ctx);
  const list = joinSql(bound.map((v) => dialect.literal(v)), ', ');
  return settle(sql`(${left} IN (${list}))`, false, ctx);
}

/** The value to test equality against; a datetime with a sub-millisecond remainder can equal nothing. */
function boundForEquality(value: Value): unknown[] {
  if (value.family !== 'datetime') return [value.value];
  return value.value.exact ? [value.value.floor] : [];
}

/** `lower <= x < upper`; for datetimes both bounds round up, which keeps both comparisons exact. */
function compileBetween(condition: Condition & { kind: 'between' }, ctx: Context): Sql {
  const { source, lower, upper } = condition;
  const boundOf = (value: Value) => (value.family === 'datetime' ? value.value.ceil : value.value);
  const left = readSource(source, lower.family, ctx);
  const range = sql`(${left} >= ${ctx.dialect.literal(boundOf(lower))} AND ${left} < ${ctx.dialect.literal(boundOf(upper))})`;
  return settle(range, false, ctx);
}
