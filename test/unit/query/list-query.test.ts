/**
 * compileListQuery end to end on SQLite (fixture.ts): every example of conventions §1.10, sorting (id
 * first, tie-breaker, nulls, directions), the `sort` parameter, paging clamps and unlimited lists, and the
 * typing errors with their exact codes and cause texts.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { compileListQuery, MAX_INT64_TEXT, type ListParams } from '../../../src/query/index.ts';
import { ALL_IDS, assertRejects, createDatabase, matching, runCompiled, table } from './fixture.ts';
import { sortCases } from './cases.ts';

let db: Database.Database;
before(() => {
  db = createDatabase();
});

function page(params: ListParams): string[] {
  return runCompiled(db, compileListQuery(table, params));
}

describe('conventions §1.10 examples', () => {
  const examples: Array<[name: string, filter: string, ids: string[]]> = [
    ['ok/example 1: exact name', 'name = "web-server"', ['e5']],
    ['ok/example 2: contains', 'name contains "web"', ['c3', 'e5']],
    ['ok/example 3: icontains', 'name icontains "WEB"', ['c3', 'e5']],
    ['ok/example 4: not contains includes null names', 'name not contains "test"', ALL_IDS],
    ['ok/example 5: id in', 'id in ["a1", "Zx9y8w7"]', ['a1']],
    ['ok/example 6: bare bool', 'isAdmin', ['a1', 'd4', 'f6']],
    ['ok/example 6: = true', 'isAdmin = true', ['a1', 'd4', 'f6']],
    ['ok/example 6: not bool', 'not isAdmin', ['b2', 'c3', 'e5', 'g7']],
    ['ok/example 7: created in January 2024',
      'createdAt >= datetime(2024-01-01T00:00:00Z) and createdAt < datetime(2024-02-01T00:00:00Z)', ['a1', 'b2', 'f6', 'g7']],
    ['ok/example 8: between is start-inclusive, end-exclusive',
      'updatedAt between datetime(2024-01-01T00:00:00Z) and datetime(2024-01-02T00:00:00Z)', ['a1', 'e5']],
    ['ok/example 9: int between', 'cost between 0 and 100', ['a1', 'b2', 'e5', 'f6', 'g7']],
    ['ok/example 9: int compared with a float', 'cost < 10.5', ['a1', 'b2', 'f6', 'g7']],
    ['ok/example 10: anyOf =', 'anyOf(roleAttributes) = "sales"', ['a1', 'g7']],
    ['ok/example 11: anyOf in', 'anyOf(roleAttributes) in ["sales", "eng"]', ['a1', 'b2', 'g7']],
    ['ok/example 12: allOf contains (true for no attributes)', 'allOf(roleAttributes) contains "prod"', ['c3', 'd4']],
    ['ok/example 13: isEmpty', 'isEmpty(roleAttributes)', ['c3']],
    ['ok/example 13: not isEmpty', 'not isEmpty(roleAttributes)', ['a1', 'b2', 'd4', 'e5', 'f6', 'g7']],
    ['ok/example 14: count', 'count(roleAttributes) >= 2', ['a1', 'd4', 'g7']],
    ['ok/example 15: tag equals', 'tags.env = "prod"', ['a1', 'f6']],
    ['ok/example 15: tag present', 'tags.env != null', ['a1', 'b2', 'f6', 'g7']],
    ['ok/example 15: dashed key', 'tags.owner-team = "x"', []],
    ['ok/example 16 (adapted: our store keeps JSON numbers): numeric tag', 'tags.replicas = 3.0', ['b2']],
    ['ok/example 17: policy role', 'anyOf(identityRoles) = "#all"', ['a1']],
    ['ok/example 18 (adapted: an int field named type)', 'type = 2', ['b2', 'c3']],
    ['ok/example 19: explicit grouping', 'name contains "a" and (isAdmin or anyOf(roleAttributes) = "ops")', ['a1']],
    ['ok/example 20: same meaning without parentheses', 'name contains "a" and isAdmin or anyOf(roleAttributes) = "ops"', ['a1']],
    ['ok/example 21: not over the whole and', 'not name = "x" and isAdmin', ALL_IDS],
    ['ok/example 25: = null', 'name = null', ['d4']],
    ['ok/example 25: != null', 'externalId != null', ['a1', 'd4', 'e5', 'g7']],
    ['ok/example 26: explicitly public dotted path', 'service.name = "ssh"', ['a1']],
  ];
  for (const [name, filter, ids] of examples) {
    it(name, () => assert.deepEqual(matching(db, filter), ids));
  }

  it('ok/example 22: third page of 10 by name desc, then createdAt', () => {
    const compiled = compileListQuery(table, { filter: 'true sort by name desc, createdAt skip 20 limit 10' });
    assert.deepEqual([compiled.orderBy, compiled.limit, compiled.offset], ['e.name DESC, e.created_at ASC, e.id ASC', 10, 20]);
    assert.deepEqual(runCompiled(db, compiled), []);
    assert.deepEqual(page({ filter: 'true sort by name desc, createdAt skip 2 limit 3' }), ['c3', 'a1', 'b2']);
  });

  it('ok/example 23: all rows, newest first, unlimited', () => {
    const compiled = compileListQuery(table, { filter: 'sort by createdAt desc limit none' });
    assert.deepEqual([compiled.unlimited, compiled.limit], [true, -1]);
    assert.deepEqual(runCompiled(db, compiled), ['c3', 'f6', 'b2', 'g7', 'a1', 'e5', 'd4']);
    assert.equal(MAX_INT64_TEXT, '9223372036854775807');
  });

  it('ok/example 24: limit 1 is the first record in id order', () => {
    assert.deepEqual(page({ filter: 'limit 1' }), ['a1']);
  });
});

describe('sorting', () => {
  for (const [name, filter, orderBy, ids] of sortCases) {
    it(name, () => {
      assert.equal(compileListQuery(table, { filter }).orderBy, orderBy);
      assert.deepEqual(matching(db, filter), ids);
    });
  }

  it('ok/the sort parameter applies when the filter has no sort by', () => {
    assert.deepEqual(matching(db, 'isAdmin', { sort: 'name desc' }), ['f6', 'a1', 'd4']);
    assert.equal(compileListQuery(table, { sort: 'type, cost desc' }).orderBy, 'e.type ASC, e.cost DESC, e.id ASC');
  });

  it('ok/the filter sort by wins over the sort parameter', () => {
    assert.equal(compileListQuery(table, { filter: 'sort by cost', sort: 'name' }).orderBy, 'e.cost ASC, e.id ASC');
  });

  it('ok/an empty sort parameter is ignored, and only its sort fields are used', () => {
    assert.equal(compileListQuery(table, { sort: '' }).orderBy, 'e.id ASC');
    const compiled = compileListQuery(table, { sort: 'name limit 1' });
    assert.deepEqual([compiled.orderBy, compiled.limit], ['e.name ASC, e.id ASC', 10]);
  });

  const sortErrors: Array<[name: string, params: ListParams, code: 'INVALID_FILTER' | 'INVALID_SORT_IDENTIFIER', message: string]> = [
    ['error/unknown sort field in the filter', { filter: 'sort by nope' }, 'INVALID_FILTER', "unknown symbol 'nope'"],
    ['error/sort by a set', { filter: 'sort by roleAttributes' }, 'INVALID_FILTER',
      "symbol 'roleAttributes' is a set symbol but is used in non-set function context"],
    ['error/sort by a tag (upstream answers 500; we reject it)', { filter: 'sort by tags.env' }, 'INVALID_FILTER', 'no such sort field: tags.env'],
    ['error/sort by an unsortable field', { filter: 'sort by secret' }, 'INVALID_FILTER', 'no such sort field: secret'],
    ['error/unknown field in the sort parameter', { sort: 'nme' }, 'INVALID_SORT_IDENTIFIER', "unknown symbol 'nme'"],
    ['error/set in the sort parameter', { sort: 'roleAttributes' }, 'INVALID_SORT_IDENTIFIER',
      "symbol 'roleAttributes' is a set symbol but is used in non-set function context"],
    ['error/tag in the sort parameter', { sort: 'tags.env' }, 'INVALID_SORT_IDENTIFIER', 'no such sort field: tags.env'],
    ['error/syntax error in the sort parameter (columns count the true sort by prefix)', { sort: 'name sideways' },
      'INVALID_SORT_IDENTIFIER', 'Unexpected symbol: "sideways" at line: 1 column: 18. line: 1, column: 18, symbol: sideways'],
    ['error/filter errors still come first', { filter: 'nope = 1', sort: 'nme' }, 'INVALID_FILTER', "unknown symbol 'nope'"],
  ];
  for (const [name, params, code, message] of sortErrors) {
    it(name, () => assertRejects(params, code, message));
  }
});

describe('paging', () => {
  const cases: Array<[name: string, params: ListParams, expected: { limit: number; offset: number; unlimited: boolean }]> = [
    ['ok/defaults', {}, { limit: 10, offset: 0, unlimited: false }],
    ['ok/limit parameter', { limit: 3, offset: 5 }, { limit: 3, offset: 5, unlimited: false }],
    ['ok/limit 0 means the default', { limit: 0 }, { limit: 10, offset: 0, unlimited: false }],
    ['ok/limit below -1 means the default', { limit: -5 }, { limit: 10, offset: 0, unlimited: false }],
    ['ok/limit above 500 is capped', { limit: 501 }, { limit: 500, offset: 0, unlimited: false }],
    ['ok/limit 500 is allowed', { limit: 500 }, { limit: 500, offset: 0, unlimited: false }],
    ['ok/limit -1 is unlimited', { limit: -1 }, { limit: -1, offset: 0, unlimited: true }],
    ['ok/negative offset is 0', { offset: -3 }, { limit: 10, offset: 0, unlimited: false }],
    ['ok/offset above 100000 is capped', { offset: 100_001 }, { limit: 10, offset: 100_000, unlimited: false }],
    ['ok/filter limit wins over the parameter', { filter: 'limit 2', limit: 5 }, { limit: 2, offset: 0, unlimited: false }],
    ['ok/filter skip wins over the parameter', { filter: 'skip 1', offset: 4 }, { limit: 10, offset: 1, unlimited: false }],
    ['ok/filter limit with the offset parameter', { filter: 'limit 2', offset: 4 }, { limit: 2, offset: 4, unlimited: false }],
    ['ok/limit none wins over the parameter', { filter: 'limit none', limit: 5 }, { limit: -1, offset: 0, unlimited: true }],
    ['ok/filter limit -1 is unlimited', { filter: 'limit -1' }, { limit: -1, offset: 0, unlimited: true }],
    ['ok/filter limit above 500 is capped', { filter: 'limit 1000' }, { limit: 500, offset: 0, unlimited: false }],
    ['ok/filter limit 0 means the default', { filter: 'limit 0' }, { limit: 10, offset: 0, unlimited: false }],
    ['ok/filter skip above 100000 is capped', { filter: 'skip 200000' }, { limit: 10, offset: 100_000, unlimited: false }],
    ['ok/huge filter limit is capped', { filter: 'limit 9223372036854775807' }, { limit: 500, offset: 0, unlimited: false }],
  ];
  for (const [name, params, expected] of cases) {
    it(name, () => {
      const { limit, offset, unlimited } = compileListQuery(table, params);
      assert.deepEqual({ limit, offset, unlimited }, expected);
    });
  }

  it('ok/pages through rows in sort order', () => {
    assert.deepEqual(page({ filter: 'sort by cost skip 1 limit 2' }), ['a1', 'f6']);
    assert.deepEqual(page({ sort: 'cost', offset: 5, limit: 2 }), ['e5', 'c3']);
    assert.deepEqual(page({ filter: 'isAdmin', limit: -1 }), ['a1', 'd4', 'f6']);
  });
});

describe('typing errors', () => {
  const errors: Array<[name: string, filter: string, message: string]> = [
    ['error/unknown symbol', 'nme = "x"', "unknown symbol 'nme'"],
    ['error/identifiers are case-sensitive', 'Name = "x"', "unknown symbol 'Name'"],
    ['error/dotted name that is neither declared nor a map key', 'type.name = "x"', "unknown symbol 'type.name'"],
    ['error/quoted identifier keeps its quotes', "'name' = \"x\"", "unknown symbol ''name''"],
    ['error/inherited object property is not a symbol', 'constructor = 1', "unknown symbol 'constructor'"],
    ['error/unknown symbol in a set function', 'count(nope) > 1', "unknown symbol 'nope'"],
    ['error/symbols are checked before types', 'name = true sort by nme', "unknown symbol 'nme'"],
    ['error/set outside a set function', 'roleAttributes = "x"', "symbol 'roleAttributes' is a set symbol but is used in non-set function context"],
    ['error/bare set', 'roleAttributes', "symbol 'roleAttributes' is a set symbol but is used in non-set function context"],
    ['error/field in anyOf', 'anyOf(name) = "x"', "symbol 'name' is not a set symbol but is used in set function anyOf"],
    ['error/field in allOf', 'allOf(cost) > 1', "symbol 'cost' is not a set symbol but is used in set function allOf"],
    ['error/field in count', 'count(name) > 1', "symbol 'name' is not a set symbol but is used in set function count"],
    ['error/field in isEmpty', 'isEmpty(name)', "symbol 'name' is not a set symbol but is used in set function isEmpty"],
    ['error/tag in a set function', 'anyOf(tags.env) = "x"', "symbol 'tags.env' is not a set symbol but is used in set function anyOf"],
    ['error/sub-query over an undeclared set', 'isEmpty(from policies where name = "x")', "unknown symbol 'policies'"],
    ['error/sub-query over a plain set', 'count(from roleAttributes where name = "x") > 0', 'attempt to subquery on non-entity symbol roleAttributes'],
    ['error/map without a key', 'tags = "x"', "symbol 'tags' is a map symbol and can only be used with a key, as in tags.<key>"],
    ['error/bare non-bool field', 'name', "symbol 'name' is of type string, not bool, and cannot be used as a condition"],
    ['error/datetime = string (upstream example)', 'createdAt = "x"', 'operation createdAt = x is not supported with operands types date, string'],
    ['error/datetime contains', 'createdAt contains "2024"', 'operation createdAt contains 2024 is not supported with operands types date, string'],
    ['error/datetime between numbers', 'createdAt between 1 and 2', 'operation createdAt between 1 and 2 is not supported with operands types date, number'],
    ['error/datetime in strings', 'createdAt in ["a", "b"]', 'operation createdAt in [a, b] is not supported with operands types date, other'],
    ['error/string = bool', 'name = true', 'operation name = true is not supported with operands types string, bool'],
    ['error/string = datetime prints the Go time', 'name = datetime(2024-01-01T10:00:00.25+02:00)',
      'operation name = 2024-01-01 10:00:00.25 +0200 +0200 is not supported with operands types string, date'],
    ['error/string between', 'name between 1 and 2', 'operation name between 1 and 2 is not supported with operands types string, number'],
    ['error/int = string', 'cost = "10"', 'operation cost = 10 is not supported with operands types number, string'],
    ['error/int < string', 'cost < "10"', 'operation cost < 10 is not supported with operands types number, string'],
    ['error/int icontains', 'cost icontains "1"', 'operation cost icontains 1 is not supported with operands types number, string'],
    ['error/int = datetime (Go prints UTC)', 'cost = datetime(2024-01-01T00:00:00Z)',
      'operation cost = 2024-01-01 00:00:00 +0000 UTC is not supported with operands types number, date'],
    ['error/int in datetimes', 'cost in [datetime(2024-01-01T00:00:00Z)]',
      'operation cost in [2024-01-01 00:00:00 +0000 UTC] is not supported with operands types number, other'],
    ['error/float = bool', 'ratio = false', 'operation ratio = false is not supported with operands types number, bool'],
    ['error/bool = number', 'isAdmin = 1', 'operation isAdmin = 1 is not supported with operands types bool, number'],
    ['error/bool < number', 'isAdmin < 1', 'operation isAdmin < 1 is not supported with operands types bool, number'],
    ['error/bool contains', 'isAdmin contains "t"', 'operation isAdmin contains t is not supported with operands types bool, string'],
    ['error/bool in', 'isAdmin in [1, 2.5]', 'operation isAdmin in [1, 2.5] is not supported with operands types bool, other'],
    ['error/float literal printed as Go %v', 'isAdmin = 1e21', 'operation isAdmin = 1e+21 is not supported with operands types bool, number'],
    ['error/set element type mismatch', 'anyOf(roleAttributes) = true',
      'operation roleAttributes = true is not supported with operands types string, bool'],
    ['error/count = null', 'count(roleAttributes) = null', 'operation count(roleAttributes) = null is not supported with operands types number, other'],
    ['error/count = string', 'count(roleAttributes) = "2"', 'operation count(roleAttributes) = 2 is not supported with operands types number, string'],
    ['error/bad datetime', 'createdAt > datetime(2023-02-29T00:00:00Z)', 'parsing time "2023-02-29T00:00:00Z": day out of range'],
    ['error/syntax error', 'name is null', 'Unexpected symbol: "is" at line: 1 column: 5. line: 1, column: 5, symbol: is'],
    ['error/whitespace-only filter', ' ', 'Unexpected symbol: "<EOF>" at line: 1 column: 1. line: 1, column: 1, symbol: <EOF>'],
  ];
  for (const [name, filter, message] of errors) {
    it(name, () => assertRejects({ filter }, 'INVALID_FILTER', message));
  }

  it('ok/leap day of a leap year is valid', () => {
    assert.deepEqual(matching(db, 'createdAt < datetime(2024-02-29T00:00:00Z)'), ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']);
  });
});
