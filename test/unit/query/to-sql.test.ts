/**
 * Compiled filters run against a real SQLite database (fixture.ts): every operator for every field type,
 * upstream's null semantics, sets, tags, precedence and keyword case. Each predicate is also run negated,
 * `not (<filter>)`, which must return exactly the other rows — the check that SQL's NULLs never leak
 * through a NOT. Also: literal text never reaches the SQL string.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { compileListQuery } from '../../../src/query/index.ts';
import { MAX_NESTING } from '../../../src/query/parser.ts';
import { ALL_IDS, complementOf, createDatabase, matching, table } from './fixture.ts';

type Case = [name: string, filter: string, ids: string[]];

const stringCases: Case[] = [
  ['ok/string =', 'name = "alpha"', ['a1']],
  ['ok/string = is case-sensitive', 'name = "ALPHA"', []],
  ['ok/string != is true for null', 'name != "alpha"', ['b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/string < compares bytes (B < a, 1 < a)', 'name < "a"', ['b2', 'g7']],
  ['ok/string <=', 'name <= "alpha"', ['a1', 'b2', 'g7']],
  ['ok/string > (UTF-8 é sorts after ASCII)', 'name > "gamma web"', ['e5', 'f6']],
  ['ok/string >=', 'name >= "web-server"', ['e5', 'f6']],
  ['ok/string in', 'name in ["alpha", "Beta", "nope"]', ['a1', 'b2']],
  ['ok/string not in is true for null', 'name not in ["alpha", "Beta"]', ['c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/string contains (case-sensitive)', 'name contains "a"', ['a1', 'b2', 'c3']],
  ['ok/string not contains is true for null', 'name not contains "web"', ['a1', 'b2', 'd4', 'f6', 'g7']],
  ['ok/string contains the empty string', 'name contains ""', ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']],
  ['ok/string icontains', 'name icontains "B"', ['b2', 'c3', 'e5']],
  ['ok/string icontains folds unicode', 'name icontains "ÉCOLE"', ['f6']],
  ['ok/string icontains never matches null (pc_upper is not given NULL)', 'name icontains "null"', []],
  ['ok/string not icontains is true for null', 'name not icontains "WEB"', ['a1', 'b2', 'd4', 'f6', 'g7']],
  ['ok/string = null', 'name = null', ['d4']],
  ['ok/string != null', 'name != null', ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']],
  ['ok/string = number compares decimal text', 'name = 10', ['g7']],
  ['ok/string = float compares Go decimal text', 'name = 10.0', ['g7']],
  ['ok/string < number compares text', 'name < 2', ['g7']],
  ['ok/string in number array', 'name in [10, 20]', ['g7']],
  ['ok/string contains number', 'name contains 0', ['g7']],
];

const intCases: Case[] = [
  ['ok/int =', 'cost = 10', ['b2']],
  ['ok/int != is true for null', 'cost != 10', ['a1', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/int <', 'cost < 10', ['a1', 'f6', 'g7']],
  ['ok/int <=', 'cost <= 10', ['a1', 'b2', 'f6', 'g7']],
  ['ok/int >', 'cost > 99', ['c3']],
  ['ok/int >=', 'cost >= 99', ['c3', 'e5']],
  ['ok/int < float promotes', 'cost < 10.5', ['a1', 'b2', 'f6', 'g7']],
  ['ok/int = float', 'cost = 10.0', ['b2']],
  ['ok/int in', 'cost in [0, 99]', ['a1', 'e5']],
  ['ok/int in mixed array (float)', 'cost in [5, 7.5]', ['f6']],
  ['ok/int in string array compares decimal text', 'cost in ["10", "100"]', ['b2', 'c3']],
  ['ok/int not in is true for null', 'cost not in [0, 99]', ['b2', 'c3', 'd4', 'f6', 'g7']],
  ['ok/int between: lower inclusive, upper exclusive', 'cost between 0 and 100', ['a1', 'b2', 'e5', 'f6', 'g7']],
  ['ok/int between equal bounds is empty', 'cost between 10 and 10', []],
  ['ok/int between float bounds', 'cost between 1.5 and 7', ['f6']],
  ['ok/int not between is true for null', 'cost not between 0 and 100', ['c3', 'd4']],
  ['ok/int contains number searches decimal text', 'cost contains 0', ['a1', 'b2', 'c3']],
  ['ok/int contains string', 'cost contains "9"', ['e5']],
  ['ok/int not contains is true for null', 'cost not contains 0', ['d4', 'e5', 'f6', 'g7']],
  ['ok/int = null', 'cost = null', ['d4']],
  ['ok/int != null', 'cost != null', ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']],
  ['ok/int64 beyond 2^53 binds exactly', 'cost < 9223372036854775807', ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']],
];

const floatCases: Case[] = [
  ['ok/float = int', 'ratio = 2', ['b2']],
  ['ok/float >', 'ratio > 1', ['b2', 'd4', 'g7']],
  ['ok/float <', 'ratio < 1', ['a1', 'e5']],
  ['ok/float <=', 'ratio <= 0.5', ['a1', 'e5']],
  ['ok/float >=', 'ratio >= 2', ['b2', 'd4', 'g7']],
  ['ok/float !=', 'ratio != 2', ['a1', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/float between', 'ratio between -2 and 1', ['a1', 'e5']],
  ['ok/float in', 'ratio in [1, 100]', ['f6', 'g7']],
  ['ok/float not in is true for null', 'ratio not in [1, 100]', ['a1', 'b2', 'c3', 'd4', 'e5']],
  ['ok/float not between is true for null', 'ratio not between -2 and 1', ['b2', 'c3', 'd4', 'f6', 'g7']],
  ['ok/float not contains is true for null', 'ratio not contains "."', ['b2', 'c3', 'f6', 'g7']],
  ['ok/float contains searches Go decimal text (2.0 is "2")', 'ratio contains "."', ['a1', 'd4', 'e5']],
  ['ok/float in string array', 'ratio in ["2", "100"]', ['b2', 'g7']],
  ['ok/float = null', 'ratio = null', ['c3']],
  ['ok/float != null', 'ratio != null', ['a1', 'b2', 'd4', 'e5', 'f6', 'g7']],
];

const boolCases: Case[] = [
  ['ok/bare bool', 'isAdmin', ['a1', 'd4', 'f6']],
  ['ok/bool = true', 'isAdmin = true', ['a1', 'd4', 'f6']],
  ['ok/bool != false', 'isAdmin != false', ['a1', 'd4', 'f6']],
  ['ok/not bool counts null as false', 'not isAdmin', ['b2', 'c3', 'e5', 'g7']],
  ['ok/bool = false matches null', 'isAdmin = false', ['b2', 'c3', 'e5', 'g7']],
  ['ok/bool != true matches null', 'isAdmin != true', ['b2', 'c3', 'e5', 'g7']],
  ['ok/bool = null', 'isAdmin = null', ['c3']],
  ['ok/bool != null', 'isAdmin != null', ['a1', 'b2', 'd4', 'e5', 'f6', 'g7']],
  ['ok/literal true and false', 'true or false', ALL_IDS],
];

const datetimeCases: Case[] = [
  ['ok/datetime =', 'createdAt = datetime(2024-01-01T00:00:00Z)', ['a1']],
  ['ok/datetime = with an offset', 'createdAt = datetime(2024-01-01T01:00:00+01:00)', ['a1']],
  ['ok/datetime = with a negative offset, lower-case t', 'createdAt = datetime(2023-12-31t19:00:00-05:00)', ['a1']],
  ['ok/datetime = with lower-case z and spaces', 'createdAt = datetime( 2024-01-01T00:00:00z )', ['a1']],
  ['ok/datetime = with a short fraction', 'createdAt = datetime(2024-01-15T10:30:00.5Z)', ['b2']],
  ['ok/datetime = with nine fraction digits', 'createdAt = datetime(2024-01-15T10:30:00.500000000Z)', ['b2']],
  ['ok/datetime != is true for null', 'createdAt != datetime(2024-01-01T00:00:00Z)', ['b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/datetime <', 'createdAt < datetime(2024-01-01T00:00:00Z)', ['e5']],
  ['ok/datetime <=', 'createdAt <= datetime(2024-01-01T00:00:00.001Z)', ['a1', 'e5', 'g7']],
  ['ok/datetime >', 'createdAt > datetime(2024-01-31T23:59:59.999Z)', ['c3']],
  ['ok/datetime >=', 'createdAt >= datetime(2024-01-31T23:59:59.999Z)', ['c3', 'f6']],
  ['ok/datetime > sub-millisecond literal', 'createdAt > datetime(2024-01-01T00:00:00.0005Z)', ['b2', 'c3', 'f6', 'g7']],
  ['ok/datetime >= sub-millisecond literal', 'createdAt >= datetime(2024-01-01T00:00:00.0005Z)', ['b2', 'c3', 'f6', 'g7']],
  ['ok/datetime < sub-millisecond literal', 'createdAt < datetime(2024-01-01T00:00:00.0005Z)', ['a1', 'e5']],
  ['ok/datetime <= sub-millisecond literal', 'createdAt <= datetime(2024-01-01T00:00:00.0005Z)', ['a1', 'e5']],
  ['ok/datetime = sub-millisecond literal never holds', 'createdAt = datetime(2024-01-01T00:00:00.0005Z)', []],
  ['ok/datetime != sub-millisecond literal always holds', 'createdAt != datetime(2024-01-01T00:00:00.0005Z)', ALL_IDS],
  ['ok/datetime before year 0 in UTC', 'createdAt < datetime(0000-01-01T00:00:00+01:00)', []],
  ['ok/datetime after year 9999 in UTC', 'createdAt > datetime(9999-12-31T23:59:59-01:00)', []],
  ['ok/datetime below a far-future instant', 'createdAt < datetime(9999-12-31T23:59:59-01:00)', ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']],
  ['ok/datetime in', 'createdAt in [datetime(2024-01-01T00:00:00Z), datetime(2024-02-01T00:00:00Z)]', ['a1', 'c3']],
  ['ok/datetime in with only sub-millisecond values', 'createdAt in [datetime(2024-01-01T00:00:00.0001Z)]', []],
  ['ok/datetime not in is true for null', 'createdAt not in [datetime(2024-01-01T00:00:00Z)]', ['b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/datetime between: start inclusive, end exclusive',
    'createdAt between datetime(2024-01-01T00:00:00Z) and datetime(2024-01-31T23:59:59.999Z)', ['a1', 'b2', 'g7']],
  ['ok/datetime between sub-millisecond bounds', 'createdAt between datetime(2024-01-01T00:00:00.0001Z) and datetime(2024-01-31T23:59:59.9995Z)',
    ['b2', 'f6', 'g7']],
  ['ok/datetime not between', 'createdAt not between datetime(2024-01-01T00:00:00Z) and datetime(2024-02-01T00:00:00Z)', ['c3', 'd4', 'e5']],
  ['ok/datetime = null', 'createdAt = null', ['d4']],
  ['ok/datetime != null', 'createdAt != null', ['a1', 'b2', 'c3', 'e5', 'f6', 'g7']],
];

const setCases: Case[] = [
  ['ok/anyOf =', 'anyOf(roleAttributes) = "sales"', ['a1', 'g7']],
  ['ok/anyOf != applies per element', 'anyOf(roleAttributes) != "sales"', ['a1', 'b2', 'd4', 'e5', 'f6', 'g7']],
  ['ok/anyOf <', 'anyOf(roleAttributes) < "f"', ['b2', 'f6', 'g7']],
  ['ok/anyOf in', 'anyOf(roleAttributes) in ["sales", "eng"]', ['a1', 'b2', 'g7']],
  ['ok/anyOf not in negates the whole anyOf (none in the list)', 'anyOf(roleAttributes) not in ["sales", "eng"]', ['c3', 'd4', 'e5', 'f6']],
  ['ok/anyOf icontains', 'anyOf(roleAttributes) icontains "SALES"', ['a1', 'f6', 'g7']],
  ['ok/anyOf not contains applies per element', 'anyOf(roleAttributes) not contains "prod"', ['a1', 'b2', 'e5', 'f6', 'g7']],
  ['ok/anyOf = null holds for no element', 'anyOf(roleAttributes) = null', []],
  ['ok/anyOf != null holds for non-empty sets', 'anyOf(roleAttributes) != null', ['a1', 'b2', 'd4', 'e5', 'f6', 'g7']],
  ['ok/none of: not anyOf', 'not anyOf(roleAttributes) = "sales"', ['b2', 'c3', 'd4', 'e5', 'f6']],
  ['ok/allOf contains is true for the empty set', 'allOf(roleAttributes) contains "prod"', ['c3', 'd4']],
  ['ok/allOf =', 'allOf(roleAttributes) = "ops"', ['c3', 'e5']],
  ['ok/allOf != applies per element', 'allOf(roleAttributes) != "ops"', ['a1', 'b2', 'c3', 'd4', 'f6', 'g7']],
  ['ok/allOf not in negates the whole allOf', 'allOf(roleAttributes) not in ["sales"]', ['a1', 'b2', 'd4', 'e5', 'f6', 'g7']],
  ['ok/allOf = null holds only for the empty set', 'allOf(roleAttributes) = null', ['c3']],
  ['ok/count >=', 'count(roleAttributes) >= 2', ['a1', 'd4', 'g7']],
  ['ok/count = 0', 'count(roleAttributes) = 0', ['c3']],
  ['ok/count between', 'count(roleAttributes) between 1 and 2', ['b2', 'e5', 'f6']],
  ['ok/count in', 'count(roleAttributes) in [0, 3]', ['c3']],
  ['ok/count contains searches decimal text', 'count(roleAttributes) contains 2', ['a1', 'd4', 'g7']],
  ['ok/isEmpty', 'isEmpty(roleAttributes)', ['c3']],
  ['ok/not isEmpty', 'not isEmpty(roleAttributes)', ['a1', 'b2', 'd4', 'e5', 'f6', 'g7']],
  ['ok/set restricted by its where (identity roles)', 'anyOf(identityRoles) = "#sales"', ['b2']],
];

const tagCases: Case[] = [
  ['ok/tag = string', 'tags.env = "prod"', ['a1', 'f6']],
  ['ok/tag != string is true when missing, null or another type', 'tags.env != "prod"', ['b2', 'c3', 'd4', 'e5', 'g7']],
  ['ok/tag < string', 'tags.env < "e"', ['b2', 'g7']],
  ['ok/tag >= string', 'tags.env >= "dev"', ['a1', 'b2', 'f6']],
  ['ok/tag contains is case-sensitive', 'tags.env contains "PRO"', ['g7']],
  ['ok/tag icontains', 'tags.env icontains "PRO"', ['a1', 'f6', 'g7']],
  ['ok/tag not contains is true when missing', 'tags.env not contains "pro"', ['b2', 'c3', 'd4', 'e5', 'g7']],
  ['ok/tag in strings', 'tags.env in ["dev", "PROD"]', ['b2', 'g7']],
  ['ok/tag not in is true when missing', 'tags.env not in ["dev"]', ['a1', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/tag = null: JSON null, missing key, or no tags at all', 'tags.env = null', ['c3', 'd4', 'e5']],
  ['ok/tag != null', 'tags.env != null', ['a1', 'b2', 'f6', 'g7']],
  ['ok/dashed tag key', 'tags.owner-team = "core"', ['a1']],
  ['ok/tag = true matches only JSON true', 'tags.flag = true', ['a1']],
  ['ok/bare tag is true only for JSON true', 'tags.flag', ['a1']],
  ['ok/tag = false matches everything not JSON true', 'tags.flag = false', ['b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/tag != true', 'tags.flag != true', ['b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/tag = "true" matches only the string', 'tags.flag = "true"', ['c3']],
  ['ok/tag holding true does not equal 1', 'tags.flag = 1', []],
  ['ok/tag string does not equal a number', 'tags.env = 1', []],
  ['ok/numeric tag with a decimal literal (example 16)', 'tags.replicas = 3.0', ['b2']],
  ['ok/numeric tag with an integer literal', 'tags.n = 3', ['b2']],
  ['ok/numeric tag compared', 'tags.replicas > 2', ['b2']],
  ['ok/numeric tag between', 'tags.replicas between 1 and 5', ['b2']],
  ['ok/numeric tag in', 'tags.n in [1, 3]', ['b2']],
  ['ok/missing tag = null', 'tags.missing = null', ALL_IDS],
  ['ok/missing tag != string', 'tags.missing != "x"', ALL_IDS],
  ['ok/nested tag path is null for flat tags', 'tags.env.x = null', ALL_IDS],
  ['ok/tag never equals a datetime', 'tags.env = datetime(2024-01-01T00:00:00Z)', []],
  ['ok/tag != datetime', 'tags.env != datetime(2024-01-01T00:00:00Z)', ALL_IDS],
];

const logicCases: Case[] = [
  ['ok/precedence: A and B or C is A and (B or C)', 'name contains "a" and isAdmin or anyOf(roleAttributes) = "ops"', ['a1']],
  ['ok/explicit grouping gives the usual meaning', '(name contains "a" and isAdmin) or anyOf(roleAttributes) = "ops"', ['a1', 'e5']],
  ['ok/precedence: A or B and C is A or (B and C)', 'cost = 0 or cost > 5 and isAdmin', ['a1']],
  ['ok/precedence: not A and B is not (A and B)', 'not name = "alpha" and isAdmin', ['b2', 'c3', 'd4', 'e5', 'f6', 'g7']],
  ['ok/parenthesised not', '(not name = "alpha") and isAdmin', ['d4', 'f6']],
  ['ok/keywords in any case', 'name CONTAINS "web" AND isAdmin = FALSE OR cost IN [0]', ['c3', 'e5']],
  ['ok/set functions and operators in any case', 'ANYOF(roleAttributes) = "ops" Or COUNT(roleAttributes) > 1 AND NOT ISEMPTY(roleAttributes)', ['a1', 'd4', 'e5', 'g7']],
  ['ok/not in and not between in upper case', 'name NOT IN ["alpha"] AND cost NOT BETWEEN 1 AND 100', ['c3', 'd4']],
  ['ok/exact dotted symbol wins over map lookup (example 26)', 'service.name = "ssh"', ['a1']],
  ['ok/int field named type (example 18)', 'type = 2', ['b2', 'c3']],
];

describe('compiled filters on SQLite', () => {
  let db: Database.Database;
  before(() => {
    db = createDatabase();
  });

  const groups: Array<[string, Case[]]> = [
    ['string fields', stringCases],
    ['int fields', intCases],
    ['float fields', floatCases],
    ['bool fields', boolCases],
    ['datetime fields', datetimeCases],
    ['sets', setCases],
    ['tags', tagCases],
    ['logic', logicCases],
  ];
  for (const [group, cases] of groups) {
    describe(group, () => {
      for (const [name, filter, ids] of cases) {
        it(name, () => {
          assert.deepEqual(matching(db, filter), ids, filter);
          assert.deepEqual(matching(db, `not (${filter})`), complementOf(ids), `not (${filter})`);
        });
      }
    });
  }

  it('ok/runs the deepest accepted nesting, negated, within SQLite limits', () => {
    const chain = Array.from({ length: MAX_NESTING - 2 }, (_, i) => `cost != ${i + 1000}`).join(' and ');
    assert.deepEqual(matching(db, `not (${chain})`), []);
    const nots = `${'not '.repeat(MAX_NESTING - 1)}isAdmin`;
    assert.deepEqual(matching(db, nots), ['b2', 'c3', 'e5', 'g7']);
  });
});

describe('generated SQL', () => {
  it('ok/never contains literal text: strings become parameters', () => {
    const attack = "'; drop table items; --";
    const compiled = compileListQuery(table, { filter: `name = "${attack}" or name contains "\\" or 1=1 --"` });
    assert.ok(!compiled.where.includes('drop'), compiled.where);
    assert.ok(!compiled.where.includes('1=1'), compiled.where);
    assert.deepEqual(compiled.params, [attack, '" or 1=1 --']);
    const db = createDatabase();
    assert.deepEqual(matching(db, `name = "${attack}"`), []);
    assert.deepEqual(db.prepare('SELECT count(*) AS n FROM items').get(), { n: ALL_IDS.length });
  });

  it('ok/never contains numbers, datetimes or tag paths', () => {
    const compiled = compileListQuery(table, {
      filter: 'cost = 4242 and createdAt > datetime(2031-05-06T07:08:09Z) and tags.owner-team = "zz" and name in [7777]',
    });
    for (const text of ['4242', '2031', 'owner-team', 'zz', '7777']) assert.ok(!compiled.where.includes(text), text);
    assert.deepEqual(compiled.params, [4242, '2031-05-06T07:08:09.000Z', '$."owner-team"', '$."owner-team"', 'zz', '7777']);
  });

  it('ok/an empty or missing filter is true', () => {
    assert.equal(compileListQuery(table, {}).where, '1');
    assert.equal(compileListQuery(table, { filter: '' }).where, '1');
  });

  it('ok/plain comparisons stay bare at the top level (index friendly); negated ones are made definite', () => {
    assert.equal(compileListQuery(table, { filter: 'name = "x"' }).where, '(e.name = ?)');
    assert.equal(compileListQuery(table, { filter: 'not name = "x"' }).where, '(NOT COALESCE((e.name = ?), 0))');
    assert.equal(compileListQuery(table, { filter: 'id in ["a", "b"]' }).where, '(e.id IN (?, ?))');
  });

  it('ok/binds an int64 beyond 2^53 as a bigint', () => {
    assert.deepEqual(compileListQuery(table, { filter: 'cost = 9007199254740993' }).params, [9007199254740993n]);
  });
});
