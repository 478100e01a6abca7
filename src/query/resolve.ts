/**
 * Symbol resolution: which declared field a name in a filter refers to, and the upstream validation pass
 * that runs before typing. Upstream checks every name of the query (predicate first, then sort fields) for
 * "unknown" and "set used in the wrong context" before it looks at any types, so a misspelt sort field is
 * reported even when the predicate also has a type error; `validateSymbols` keeps that order.
 * `<map>.<key>` (e.g. `tags.owner-team`) resolves to a key of a declared map symbol.
 */
import { invalidFilter } from '../errors.ts';
import type { Expr, Query, SetRef } from './ast.ts';
import type { MapSymbol, ScalarSymbol, SetSymbol, SymbolTable } from './symbols.ts';

export type Resolved =
  | { kind: 'scalar'; symbol: ScalarSymbol }
  | { kind: 'set'; symbol: SetSymbol }
  /** The map itself, named without a key. */
  | { kind: 'map'; symbol: MapSymbol }
  | { kind: 'mapKey'; symbol: MapSymbol; keys: string[] };

export type SetFunctionName = 'anyOf' | 'allOf' | 'count' | 'isEmpty';

/** Looks a name up; exact declarations win over the `<map>.<key>` form. Own properties only. */
export function resolveSymbol(table: SymbolTable, name: string): Resolved | undefined {
  const declared = Object.hasOwn(table.symbols, name) ? table.symbols[name] : undefined;
  if (declared) {
    if (declared.kind === 'scalar') return { kind: 'scalar', symbol: declared };
    if (declared.kind === 'set') return { kind: 'set', symbol: declared };
    return { kind: 'map', symbol: declared };
  }
  const [base, ...keys] = name.split('.');
  const map = keys.length > 0 && Object.hasOwn(table.symbols, base) ? table.symbols[base] : undefined;
  return map?.kind === 'map' ? { kind: 'mapKey', symbol: map, keys } : undefined;
}

export function unknownSymbol(name: string): Error {
  return invalidFilter(`unknown symbol '${name}'`);
}

/** Resolves a name used outside set functions: a plain field or a map key. */
export function resolvePlain(table: SymbolTable, name: string): Extract<Resolved, { kind: 'scalar' | 'mapKey' }> {
  const resolved = resolveSymbol(table, name);
  if (!resolved) throw unknownSymbol(name);
  if (resolved.kind === 'set') {
    throw invalidFilter(`symbol '${name}' is a set symbol but is used in non-set function context`);
  }
  if (resolved.kind === 'map') {
    throw invalidFilter(`symbol '${name}' is a map symbol and can only be used with a key, as in ${name}.<key>`);
  }
  return resolved;
}

/** Resolves the argument of anyOf/allOf/count/isEmpty, which must be a declared set. */
export function resolveSet(table: SymbolTable, ref: SetRef | string, fn: SetFunctionName): SetSymbol {
  const name = typeof ref === 'string' ? ref : ref.name;
  const resolved = resolveSymbol(table, name);
  if (!resolved) throw unknownSymbol(name);
  if (typeof ref !== 'string' && ref.kind === 'subQuery') {
    // Upstream sub-queries need entity-reference sets, which no resource declares yet.
    throw invalidFilter(`attempt to subquery on non-entity symbol ${name}`);
  }
  if (resolved.kind !== 'set') {
    throw invalidFilter(`symbol '${name}' is not a set symbol but is used in set function ${fn}`);
  }
  return resolved.symbol;
}

/** Upstream's symbol validation pass: every name in text order, predicate before sort fields. */
export function validateSymbols(query: Query, table: SymbolTable): void {
  validateExpr(query.predicate, table);
  for (const field of query.sort) resolvePlain(table, field.name);
}

function validateExpr(expr: Expr, table: SymbolTable): void {
  switch (expr.kind) {
    case 'and':
    case 'or':
      validateExpr(expr.left, table);
      validateExpr(expr.right, table);
      return;
    case 'not':
      validateExpr(expr.operand, table);
      return;
    case 'constant':
      return;
    case 'symbol':
      resolvePlain(table, expr.name);
      return;
    case 'isEmpty':
      resolveSet(table, expr.set, 'isEmpty');
      return;
    case 'compare':
    case 'in':
    case 'between':
      if (expr.lhs.kind === 'field') resolvePlain(table, expr.lhs.name);
      else if (expr.lhs.kind === 'count') resolveSet(table, expr.lhs.set, 'count');
      else resolveSet(table, expr.lhs.name, expr.lhs.kind);
      return;
  }
}
