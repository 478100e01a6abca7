/**
 * The typing pass: untyped AST + SymbolTable → typed condition (typed.ts), applying upstream's rules
 * (ast/node_convert.go). The left-hand field's type picks the operator family, except for map keys
 * (`tags.x`, type "any"), where the literal's type does. Numbers compare with strings as decimal text,
 * `contains` works on anything with a text form, bool fields accept only `= true/false`, and a mismatch
 * fails with upstream's `operation … is not supported with operands types …` text. `not in` and
 * `not between` negate the whole set function (`anyOf(x) not in [..]` = none of x is in the list) while
 * `!=` and `not contains` apply per element — upstream builds them that way, so we do too.
 */
import { invalidFilter } from '../errors.ts';
import type { ArrayLiteral, CompareOp as WrittenOp, Expr, Lhs, Literal, Query, SortField } from './ast.ts';
import { describeArray, describeLiteral, numberAsText } from './literals.ts';
import { resolvePlain, resolveSet, validateSymbols } from './resolve.ts';
import type { ScalarType, SetSymbol, SymbolTable } from './symbols.ts';
import type { CheckedQuery, CompareOp, Condition, SortTerm, Source, Value } from './typed.ts';

/** The left-hand side of a comparison once resolved. */
interface Subject {
  /** How upstream prints the left operand in type errors (the set's name for anyOf/allOf). */
  label: string;
  /** Drives operator selection; "any" defers to the literal. */
  type: ScalarType | 'any';
  source: Source;
  /** anyOf/allOf: the comparison runs per element, then is quantified. */
  quantifier?: { kind: 'anyOf' | 'allOf'; set: SetSymbol };
}

/** Resolves and types a parsed query; throws INVALID_FILTER with upstream's texts. */
export function checkQuery(query: Query, table: SymbolTable): CheckedQuery {
  validateSymbols(query, table);
  return {
    condition: checkExpr(query.predicate, table),
    sort: query.sort.map((field) => checkSortField(field, table)),
    skip: query.skip?.value,
    limit: query.limit?.value,
  };
}

function checkSortField(field: SortField, table: SymbolTable): SortTerm {
  const resolved = resolvePlain(table, field.name);
  // Map keys and fields declared unsortable are rejected up front (upstream fails later with a 500).
  if (resolved.kind !== 'scalar' || resolved.symbol.sortable === false) {
    throw invalidFilter(`no such sort field: ${field.name}`);
  }
  return { name: field.name, sql: resolved.symbol.sql, ascending: field.ascending, ...(resolved.symbol.unique ? { unique: true } : {}) };
}

function checkExpr(expr: Expr, table: SymbolTable): Condition {
  switch (expr.kind) {
    case 'and':
    case 'or':
      return { kind: expr.kind, left: checkExpr(expr.left, table), right: checkExpr(expr.right, table) };
    case 'not':
      return { kind: 'not', operand: checkExpr(expr.operand, table) };
    case 'constant':
      return { kind: 'constant', value: expr.value };
    case 'symbol':
      return checkBareSymbol(expr.name, table);
    case 'isEmpty':
      return { kind: 'isEmpty', set: resolveSet(table, expr.set, 'isEmpty') };
    case 'compare':
      return checkCompare(subjectOf(expr.lhs, table), expr.op, expr.value);
    case 'in':
      return negateIf(expr.negated, checkIn(subjectOf(expr.lhs, table), expr.values));
    case 'between':
      return negateIf(expr.negated, checkBetween(subjectOf(expr.lhs, table), expr.lower, expr.upper));
  }
}

function negateIf(negated: boolean, condition: Condition): Condition {
  return negated ? { kind: 'not', operand: condition } : condition;
}

/** A bare name as a condition: a bool field, or a tag that holds JSON true. */
function checkBareSymbol(name: string, table: SymbolTable): Condition {
  const resolved = resolvePlain(table, name);
  if (resolved.kind === 'mapKey') {
    return { kind: 'isTrue', source: { kind: 'tag', mapSql: resolved.symbol.sql, keys: resolved.keys } };
  }
  if (resolved.symbol.type !== 'bool') {
    throw invalidFilter(`symbol '${name}' is of type ${typeName(resolved.symbol.type)}, not bool, and cannot be used as a condition`);
  }
  return { kind: 'isTrue', source: { kind: 'column', sql: resolved.symbol.sql, type: 'bool' } };
}

function subjectOf(lhs: Lhs, table: SymbolTable): Subject {
  if (lhs.kind === 'count') {
    const set = resolveSet(table, lhs.set, 'count');
    return { label: `count(${lhs.set.name})`, type: 'int', source: { kind: 'count', set } };
  }
  if (lhs.kind === 'anyOf' || lhs.kind === 'allOf') {
    const set = resolveSet(table, lhs.name, lhs.kind);
    const source: Source = { kind: 'element', type: set.elementType };
    return { label: lhs.name, type: set.elementType, source, quantifier: { kind: lhs.kind, set } };
  }
  const resolved = resolvePlain(table, lhs.name);
  if (resolved.kind === 'mapKey') {
    return { label: lhs.name, type: 'any', source: { kind: 'tag', mapSql: resolved.symbol.sql, keys: resolved.keys } };
  }
  const { type, sql } = resolved.symbol;
  return { label: lhs.name, type, source: { kind: 'column', sql, type } };
}

/** Wraps a per-element condition in its set function (no-op for plain fields). */
function quantify(subject: Subject, condition: Condition): Condition {
  const q = subject.quantifier;
  return q ? { kind: q.kind, set: q.set, condition } : condition;
}

function typeName(type: ScalarType | 'any'): string {
  if (type === 'int' || type === 'float') return 'number';
  return type === 'datetime' ? 'date' : type;
}

function literalTypeName(literal: Literal): string {
  if (literal.kind === 'null') return 'other';
  return typeName(literal.kind);
}

function unsupported(subject: Subject, operation: string, rightType: string): Error {
  return invalidFilter(
    `operation ${subject.label} ${operation} is not supported with operands types ${typeName(subject.type)}, ${rightType}`,
  );
}

/** Fields with a text form: upstream's StringNode (strings, numbers, counts, map values). */
function hasTextForm(type: ScalarType | 'any'): boolean {
  return type === 'string' || type === 'int' || type === 'float' || type === 'any';
}

function isNumeric(type: string): boolean {
  return type === 'int' || type === 'float';
}

type NumberLiteral = Extract<Literal, { kind: 'int' | 'float' }>;
type TextLikeLiteral = Extract<Literal, { kind: 'string' | 'int' | 'float' }>;

function isNumberLiteral(literal: Literal): literal is NumberLiteral {
  return literal.kind === 'int' || literal.kind === 'float';
}

/** Literals with a text form: strings, and numbers as their decimal text. */
function isTextLike(literal: Literal): literal is TextLikeLiteral {
  return literal.kind === 'string' || isNumberLiteral(literal);
}

function textValue(literal: TextLikeLiteral): Value {
  return { family: 'text', value: literal.kind === 'string' ? literal.value : numberAsText(literal) };
}

function numberValue(literal: NumberLiteral): Value {
  const { value } = literal;
  // An int64 beyond 2^53 stays a bigint so the driver binds it exactly.
  const isSafe = typeof value === 'number' || (value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER));
  return { family: 'number', value: isSafe ? Number(value) : value };
}

/** The literal as a value of the comparison family, or undefined when upstream has no such operation. */
function valueInFamily(family: string, literal: Literal): Value | undefined {
  if (family === 'datetime') return literal.kind === 'datetime' ? { family: 'datetime', value: literal.value } : undefined;
  if (isNumeric(family)) return isNumberLiteral(literal) ? numberValue(literal) : undefined;
  if (family === 'string') return isTextLike(literal) ? textValue(literal) : undefined;
  return undefined;
}

function compareWith(subject: Subject, op: CompareOp, value: Value, ignoreCase: boolean): Condition {
  return quantify(subject, { kind: 'compare', source: subject.source, op, value, ignoreCase });
}

function checkCompare(subject: Subject, op: WrittenOp, literal: Literal): Condition {
  const mismatch = () => unsupported(subject, `${op} ${describeLiteral(literal)}`, literalTypeName(literal));
  if (literal.kind === 'null') {
    // `= null` tests a field, a map key or a set element; a count is never absent.
    if (subject.source.kind === 'count') throw mismatch();
    const isNull: Condition = { kind: 'isNull', source: subject.source };
    return quantify(subject, op === '=' ? isNull : { kind: 'not', operand: isNull });
  }
  if (op === 'contains' || op === 'not contains') {
    // Upstream's shortcut: anything with a text form is searched as text.
    if (!hasTextForm(subject.type) || !isTextLike(literal)) throw mismatch();
    return compareWith(subject, op, textValue(literal), false);
  }
  // Otherwise the field's type picks the family; a map value ("any") takes the literal's.
  const family = subject.type === 'any' ? literal.kind : subject.type;
  if (family === 'bool') {
    if (literal.kind !== 'bool' || (op !== '=' && op !== '!=')) throw mismatch();
    const isTrue: Condition = { kind: 'isTrue', source: subject.source };
    return quantify(subject, (op === '=') === literal.value ? isTrue : { kind: 'not', operand: isTrue });
  }
  if (op === 'icontains' || op === 'not icontains') {
    if (family !== 'string' || literal.kind !== 'string') throw mismatch();
    return compareWith(subject, op === 'icontains' ? 'contains' : 'not contains', textValue(literal), true);
  }
  const value = valueInFamily(family, literal);
  if (!value) throw mismatch();
  return compareWith(subject, op, value, false);
}

function checkIn(subject: Subject, array: ArrayLiteral): Condition {
  const type = subject.type;
  const build = (values: Value[]): Condition =>
    quantify(subject, { kind: 'in', source: subject.source, family: values[0].family, values });
  if (array.kind === 'datetimes' && (type === 'datetime' || type === 'any')) {
    return build(array.values.map((v) => ({ family: 'datetime', value: v.value })));
  }
  if (array.kind === 'numbers' && (isNumeric(type) || type === 'any')) return build(array.values.map(numberValue));
  if (array.kind !== 'datetimes' && hasTextForm(type)) {
    const values: TextLikeLiteral[] = array.values;
    return build(values.map(textValue));
  }
  throw unsupported(subject, `in ${describeArray(array)}`, 'other');
}

function checkBetween(subject: Subject, lower: Literal, upper: Literal): Condition {
  const type = subject.type;
  const build = (lowerValue: Value, upperValue: Value): Condition =>
    quantify(subject, { kind: 'between', source: subject.source, lower: lowerValue, upper: upperValue });
  if (lower.kind === 'datetime' && upper.kind === 'datetime' && (type === 'datetime' || type === 'any')) {
    return build({ family: 'datetime', value: lower.value }, { family: 'datetime', value: upper.value });
  }
  if (isNumberLiteral(lower) && isNumberLiteral(upper) && (isNumeric(type) || type === 'any')) {
    return build(numberValue(lower), numberValue(upper));
  }
  const operation = `between ${describeLiteral(lower)} and ${describeLiteral(upper)}`;
  throw unsupported(subject, operation, literalTypeName(lower));
}
