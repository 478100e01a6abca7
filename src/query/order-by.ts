/**
 * Sort terms → the SQL after `ORDER BY`. Upstream scans in id order when there are no sort fields or the
 * first one is `id` (so `sort by id desc, name` is just id descending); otherwise it sorts by the listed
 * fields and breaks ties by id ascending, so pages never overlap.
 */
import type { Dialect } from './dialect.ts';
import { joinSql, trusted } from './sql.ts';
import type { SortTerm } from './typed.ts';

export function orderBySql(sort: readonly SortTerm[], idSql: string, dialect: Dialect): string {
  const id = trusted(idSql);
  if (sort.length === 0 || sort[0].name === 'id') {
    return dialect.orderTerm(id, sort[0]?.ascending ?? true).text;
  }
  const uniqueAt = sort.findIndex((term) => term.unique);
  const used = uniqueAt < 0 ? sort : sort.slice(0, uniqueAt + 1);
  const terms = used.map((term) => dialect.orderTerm(trusted(term.sql), term.ascending));
  // Terms after a unique one never decide anything, nor does the tie-breaker.
  return joinSql(uniqueAt < 0 ? [...terms, dialect.orderTerm(id, true)] : terms, ', ').text;
}
