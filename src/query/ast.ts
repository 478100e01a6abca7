/**
 * The parsed (untyped) filter: what the text says, before any symbol is looked up. Literal values are
 * already decoded (strings unescaped, numbers as int64/float64, datetimes validated) because upstream
 * decodes them while building its tree, so decoding errors surface before symbol errors. Every node keeps
 * the position of its first token (1-based line, 0-based column) for diagnostics.
 */
import type { DatetimeValue } from './datetime.ts';

export interface Position {
  line: number;
  column: number;
}

export type Literal =
  | { kind: 'string'; value: string; pos: Position }
  | { kind: 'int'; value: bigint; pos: Position }
  | { kind: 'float'; value: number; pos: Position }
  | { kind: 'datetime'; value: DatetimeValue; pos: Position }
  | { kind: 'bool'; value: boolean; pos: Position }
  | { kind: 'null'; pos: Position };

export type NumberLiteral = Extract<Literal, { kind: 'int' | 'float' }>;
export type StringLiteral = Extract<Literal, { kind: 'string' }>;
export type DatetimeLiteral = Extract<Literal, { kind: 'datetime' }>;

/**
 * `[...]` after `in`: never empty, all elements of one kind. A number array holding any float is promoted
 * to all-float, as upstream does.
 */
export type ArrayLiteral =
  | { kind: 'strings'; values: StringLiteral[]; pos: Position }
  | { kind: 'numbers'; values: NumberLiteral[]; pos: Position }
  | { kind: 'datetimes'; values: DatetimeLiteral[]; pos: Position };

/** A set named directly, or upstream's `from <set> where <query>` sub-query form. */
export type SetRef =
  | { kind: 'set'; name: string; pos: Position }
  | { kind: 'subQuery'; name: string; query: Query; pos: Position };

/** The left-hand side of a comparison. */
export type Lhs =
  | { kind: 'field'; name: string; pos: Position }
  | { kind: 'anyOf' | 'allOf'; name: string; pos: Position }
  | { kind: 'count'; set: SetRef; pos: Position };

export type CompareOp =
  | '=' | '!=' | '<' | '<=' | '>' | '>='
  | 'contains' | 'not contains' | 'icontains' | 'not icontains';

export type Expr =
  | { kind: 'and' | 'or'; left: Expr; right: Expr; pos: Position }
  | { kind: 'not'; operand: Expr; pos: Position }
  /** Literal `true` / `false` used as a whole condition. */
  | { kind: 'constant'; value: boolean; pos: Position }
  /** A bare identifier used as a condition (a bool field). */
  | { kind: 'symbol'; name: string; pos: Position }
  | { kind: 'isEmpty'; set: SetRef; pos: Position }
  | { kind: 'compare'; lhs: Lhs; op: CompareOp; value: Literal; pos: Position }
  | { kind: 'in'; lhs: Lhs; negated: boolean; values: ArrayLiteral; pos: Position }
  | { kind: 'between'; lhs: Lhs; negated: boolean; lower: Literal; upper: Literal; pos: Position };

export interface SortField {
  name: string;
  ascending: boolean;
  pos: Position;
}

export interface Query {
  /** `true` when the filter has only sort/skip/limit. */
  predicate: Expr;
  /** Empty when the filter has no `sort by`. */
  sort: SortField[];
  /** Integers only (upstream rejects `skip 1.5`); clamping happens when paging is resolved. */
  skip?: { value: bigint; pos: Position };
  /** `limit none` is kept apart from numbers; both become upstream's -1 marker only when paging is resolved. */
  limit?: { value: bigint | 'none'; pos: Position };
}
