/**
 * The typed filter: the output of the typing pass (check.ts) and the input of SQL generation (to-sql.ts).
 * Every decision upstream's type rules make — which operator family applies, whether a number is compared
 * as text, whether a negation sits inside or outside a set function — is already made here, so the SQL
 * side only translates. Sources name where a value lives; comparisons say how to read it.
 */
import type { DatetimeValue } from './datetime.ts';
import type { ScalarType, SetSymbol } from './symbols.ts';

/** Where a compared value comes from. Every source may be absent (NULL) except a count. */
export type Source =
  | { kind: 'column'; sql: string; type: ScalarType }
  /** The set element being tested inside anyOf/allOf. */
  | { kind: 'element'; type: ScalarType }
  | { kind: 'count'; set: SetSymbol }
  /** One key of a JSON map column such as `tags`; nested keys for `tags.a.b`. */
  | { kind: 'tag'; mapSql: string; keys: string[] };

/** A literal already converted to the family the comparison runs in; the source is read the same way. */
export type Value =
  | { family: 'text'; value: string }
  | { family: 'number'; value: number | bigint }
  | { family: 'datetime'; value: DatetimeValue };

export type Family = Value['family'];

/** `icontains` arrives here as `contains` with `ignoreCase`. */
export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=' | 'contains' | 'not contains';

export type Condition =
  | { kind: 'constant'; value: boolean }
  | { kind: 'and' | 'or'; left: Condition; right: Condition }
  | { kind: 'not'; operand: Condition }
  | { kind: 'compare'; source: Source; op: CompareOp; value: Value; ignoreCase: boolean }
  | { kind: 'in'; source: Source; family: Family; values: Value[] }
  | { kind: 'between'; source: Source; lower: Value; upper: Value }
  /** `= null`: the value is absent (or JSON null for a tag). */
  | { kind: 'isNull'; source: Source }
  /** A bool field, or a tag holding JSON `true`; absent counts as false. */
  | { kind: 'isTrue'; source: Source }
  | { kind: 'anyOf' | 'allOf'; set: SetSymbol; condition: Condition }
  | { kind: 'isEmpty'; set: SetSymbol };

export interface SortTerm {
  /** The field name as written, so the caller can tell `id` apart. */
  name: string;
  sql: string;
  ascending: boolean;
  /** The field's values are unique and never NULL, so sorting by it is already a total order. */
  unique?: boolean;
}

export interface CheckedQuery {
  condition: Condition;
  sort: SortTerm[];
  skip?: bigint;
  limit?: bigint | 'none';
}
