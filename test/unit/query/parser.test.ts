/**
 * The parser against upstream's grammar: the odd and/or/not precedence, where whitespace is required,
 * clause order, arrays, set functions and sub-queries, literal decoding, and the exact syntax error text
 * (first offending token, 1-based line, 0-based column, `<EOF>` at the end of input).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../../src/errors.ts';
import type { Expr, Lhs, Literal, Query, SetRef } from '../../../src/query/ast.ts';
import { MAX_FILTER_LENGTH, MAX_NESTING, parseFilter } from '../../../src/query/parser.ts';

function showLiteral(literal: Literal): string {
  switch (literal.kind) {
    case 'string':
      return JSON.stringify(literal.value);
    case 'int':
      return `${literal.value}i`;
    case 'float':
      return `${literal.value}f`;
    case 'datetime':
      return `dt(${literal.value.floor})`;
    case 'bool':
      return String(literal.value);
    case 'null':
      return 'null';
  }
}

function showSet(set: SetRef): string {
  return set.kind === 'set' ? set.name : `(from ${set.name} where ${showQuery(set.query)})`;
}

function showLhs(lhs: Lhs): string {
  if (lhs.kind === 'field') return lhs.name;
  if (lhs.kind === 'count') return `count(${showSet(lhs.set)})`;
  return `${lhs.kind}(${lhs.name})`;
}

/** A compact S-expression, so precedence is visible at a glance. */
function show(expr: Expr): string {
  switch (expr.kind) {
    case 'and':
    case 'or':
      return `(${expr.kind} ${show(expr.left)} ${show(expr.right)})`;
    case 'not':
      return `(not ${show(expr.operand)})`;
    case 'constant':
      return String(expr.value);
    case 'symbol':
      return expr.name;
    case 'isEmpty':
      return `(isEmpty ${showSet(expr.set)})`;
    case 'compare':
      return `(${expr.op} ${showLhs(expr.lhs)} ${showLiteral(expr.value)})`;
    case 'in':
      return `(${expr.negated ? 'not in' : 'in'} ${showLhs(expr.lhs)} [${expr.values.values.map(showLiteral).join(' ')}])`;
    case 'between':
      return `(${expr.negated ? 'not between' : 'between'} ${showLhs(expr.lhs)} ${showLiteral(expr.lower)} ${showLiteral(expr.upper)})`;
  }
}

function showQuery(query: Query): string {
  const parts = [show(query.predicate)];
  if (query.sort.length > 0) parts.push(`sort ${query.sort.map((f) => `${f.name} ${f.ascending ? 'asc' : 'desc'}`).join(', ')}`);
  if (query.skip) parts.push(`skip ${query.skip.value}`);
  if (query.limit) parts.push(`limit ${query.limit.value}`);
  return parts.join(' | ');
}

function syntaxMessage(symbol: string, line: number, column: number): string {
  return `Unexpected symbol: "${symbol}" at line: ${line} column: ${column}. line: ${line}, column: ${column}, symbol: ${symbol}`;
}

function assertInvalidFilter(filter: string, message: string): void {
  assert.throws(
    () => parseFilter(filter),
    (error: unknown) => {
      assert.ok(error instanceof ApiError, `expected ApiError, got ${String(error)}`);
      assert.equal(error.code, 'INVALID_FILTER');
      assert.deepEqual(error.cause, { code: 'UNHANDLED', message });
      return true;
    },
  );
}

const okCases: Array<[name: string, filter: string, parsed: string]> = [
  // precedence (conventions §1.4)
  ['ok/and then or groups to the right', 'a and b or c', '(and a (or b c))'],
  ['ok/or then and groups to the right', 'a or b and c', '(or a (and b c))'],
  ['ok/not takes the rest of the expression', 'not a and b', '(not (and a b))'],
  ['ok/not in the middle takes the rest', 'a and not b or c', '(and a (not (or b c)))'],
  ['ok/parentheses group as usual', '(a and b) or c', '(or (and a b) c)'],
  ['ok/parenthesised not stays local', '(not a) and b', '(and (not a) b)'],
  ['ok/long chain groups to the right', 'a and b and c or d', '(and a (and b (or c d)))'],
  ['ok/keywords are case-insensitive', 'a AND b Or NOT c', '(and a (or b (not c)))'],
  ['ok/example 20: and/or without parentheses', 'name contains "a" and isAdmin or anyOf(roleAttributes) = "ops"',
    '(and (contains name "a") (or isAdmin (= anyOf(roleAttributes) "ops")))'],
  ['ok/example 21: not over and', 'not name = "x" and isAdmin', '(not (and (= name "x") isAdmin))'],
  // whitespace
  ['ok/no whitespace around =', 'a=1', '(= a 1i)'],
  ['ok/spaces, tabs and newlines around operators', ' a\t<=\n1 ', '(<= a 1i)'],
  ['ok/whitespace inside parentheses', '( a = 1 )', '(= a 1i)'],
  ['ok/newlines between conditions', 'a = 1\nand\nb = 2', '(and (= a 1i) (= b 2i))'],
  ['ok/contains needs no whitespace before it', 'name contains "x"', '(contains name "x")'],
  // operators and literals
  ['ok/every comparison operator', 'a != "x" or a < 1 or a <= 1.5 or a > datetime(2024-01-01T00:00:00Z) or a >= -2',
    '(or (!= a "x") (or (< a 1i) (or (<= a 1.5f) (or (> a dt(2024-01-01T00:00:00.000Z)) (>= a -2i)))))'],
  ['ok/= with bool and null', 'a = true and b = NULL and c != False', '(and (= a true) (and (= b null) (!= c false)))'],
  ['ok/contains variants', 'a not contains "x" and b icontains "Y" and c not icontains "z" and d contains 5',
    '(and (not contains a "x") (and (icontains b "Y") (and (not icontains c "z") (contains d 5i))))'],
  ['ok/in with strings, spaced', 'id in [ "a" , "b","c" ]', '(in id ["a" "b" "c"])'],
  ['ok/not in with numbers', 'cost not in [1, 2]', '(not in cost [1i 2i])'],
  ['ok/a float promotes the whole number array', 'cost in [1, 2.5]', '(in cost [1f 2.5f])'],
  ['ok/in with datetimes', 'createdAt in [datetime(2024-01-01T00:00:00Z)]', '(in createdAt [dt(2024-01-01T00:00:00.000Z)])'],
  ['ok/between numbers and not between datetimes',
    'cost between 0 and 100 and createdAt not between datetime(2024-01-01T00:00:00Z) and datetime(2024-02-01T00:00:00Z)',
    '(and (between cost 0i 100i) (not between createdAt dt(2024-01-01T00:00:00.000Z) dt(2024-02-01T00:00:00.000Z)))'],
  ['ok/bare bool field and literal predicates', 'isAdmin and true or false', '(and isAdmin (or true false))'],
  // sets
  ['ok/set functions', 'anyOf(r) = "x" and allOf( r ) contains "p" and count(r) >= 2 and isEmpty(r)',
    '(and (= anyOf(r) "x") (and (contains allOf(r) "p") (and (>= count(r) 2i) (isEmpty r))))'],
  ['ok/set functions in any case', 'ANYOF(r) = "x" or ISEMPTY(r)', '(or (= anyOf(r) "x") (isEmpty r))'],
  ['ok/sub-query forms', 'not isEmpty(from policies where anyOf(identities) = "x") and count(from a where b = 1 limit 2) > 0',
    '(not (and (isEmpty (from policies where (= anyOf(identities) "x"))) (> count((from a where (= b 1i) | limit 2)) 0i)))'],
  // clauses
  ['ok/example 22: predicate, sort, skip, limit', 'true sort by name desc, createdAt skip 20 limit 10',
    'true | sort name desc, createdAt asc | skip 20 | limit 10'],
  ['ok/example 23: sort and limit none only', 'sort by createdAt desc limit none', 'true | sort createdAt desc | limit none'],
  ['ok/example 24: limit only', 'limit 1', 'true | limit 1'],
  ['ok/skip only, and skip then limit', 'skip 5 limit 2', 'true | skip 5 | limit 2'],
  ['ok/clause keywords in any case, spaced commas', 'a = 1 SORT BY b ASC , c DeSc LIMIT NONE', '(= a 1i) | sort b asc, c desc | limit none'],
  ['ok/negative skip and limit parse (clamped later)', 'skip -5 limit -1', 'true | skip -5 | limit -1'],
  ['ok/quoted identifier keeps its quotes (unknown later)', "'name' = 1", "(= 'name' 1i)"],
];

describe('parseFilter', () => {
  for (const [name, filter, parsed] of okCases) {
    it(name, () => assert.equal(showQuery(parseFilter(filter)), parsed));
  }

  it('ok/decodes strings with upstream multi-pass unescaping', () => {
    const value = (filter: string) => {
      const predicate = parseFilter(filter).predicate;
      assert.equal(predicate.kind, 'compare');
      return predicate.kind === 'compare' && predicate.value.kind === 'string' ? predicate.value.value : undefined;
    };
    assert.equal(value(String.raw`a = "q\"q"`), 'q"q');
    assert.equal(value(String.raw`a = "tab\there"`), 'tab\there');
    assert.equal(value(String.raw`a = "back\\slash"`), 'back\\slash');
    assert.equal(value(String.raw`a = "quirk\\n"`), 'quirk\n');
    assert.equal(value('a = "héllo 😀"'), 'héllo 😀');
  });

  it('ok/numbers are int64 when they fit, float64 otherwise', () => {
    assert.equal(showQuery(parseFilter('a = 9223372036854775807')), '(= a 9223372036854775807i)');
    assert.equal(showQuery(parseFilter('a = -9223372036854775808')), '(= a -9223372036854775808i)');
    assert.equal(showQuery(parseFilter('a = 9223372036854775808')), '(= a 9223372036854776000f)');
    assert.equal(showQuery(parseFilter('a = 1e2')), '(= a 100f)');
    assert.equal(showQuery(parseFilter('a = -0')), '(= a 0i)');
  });

  it('ok/records positions of nodes', () => {
    const predicate = parseFilter('a = 1 and\n  b = 2').predicate;
    assert.equal(predicate.kind, 'and');
    if (predicate.kind === 'and') {
      assert.deepEqual(predicate.left.pos, { line: 1, column: 0 });
      assert.deepEqual(predicate.right.pos, { line: 2, column: 2 });
    }
  });

  it(`ok/accepts ${MAX_NESTING} nested conditions`, () => {
    assert.doesNotThrow(() => parseFilter(Array.from({ length: MAX_NESTING }, () => 'a = 1').join(' and ')));
  });

  const syntaxErrors: Array<[name: string, filter: string, symbol: string, line: number, column: number]> = [
    ['error/whitespace-only filter', '   ', '<EOF>', 1, 3],
    ['error/upper-case DATETIME(', 'createdAt > DATETIME(2024-01-01T00:00:00Z)', 'DATETIME', 1, 12],
    ['error/invalid month is not a datetime literal', 'createdAt > datetime(2024-13-01T00:00:00Z)', 'datetime', 1, 12],
    ['error/datetime without a time', 'createdAt > datetime(2024-01-01)', 'datetime', 1, 12],
    ['error/datetime without a timezone', 'createdAt > datetime(2024-01-01T00:00:00)', 'datetime', 1, 12],
    ['error/digit in an identifier', 'tags.foo1 = 1', '1', 1, 8],
    ['error/exponent with a leading zero', 'a = 1e05', '5', 1, 7],
    ['error/leading zeros', 'a = 007', '0', 1, 5],
    ['error/number starting with a dot', 'a = .5', '.', 1, 4],
    ['error/empty array', 'a in []', ']', 1, 6],
    ['error/bool array', 'a in [true]', 'true', 1, 6],
    ['error/mixed array', 'a in [1, "x"]', '"x"', 1, 9],
    ['error/in without whitespace after it', 'a in[1]', '[', 1, 4],
    ['error/limit before skip', 'limit 10 skip 5', 'skip', 1, 9],
    ['error/sort after limit', 'a = 1 limit 1 sort by a', 'sort', 1, 14],
    ['error/two spaces in not in', 'a not  in [1]', 'not', 1, 2],
    ['error/is null', 'name is null', 'is', 1, 5],
    ['error/is not null', 'name is not null', 'is', 1, 5],
    ['error/like', 'name like "x"', 'like', 1, 5],
    ['error/startsWith', 'name startsWith "x"', 'startsWith', 1, 5],
    ['error/and glued to a parenthesis', 'x=1 and(y=2)', '(', 1, 7],
    ['error/contains glued to its string', 'name contains"x"', '"x"', 1, 13],
    ['error/not glued to a parenthesis', 'not(a = 1)', '(', 1, 3],
    ['error/isEmpty compared with false', 'isEmpty(x) = false', '=', 1, 11],
    ['error/literal on the left', '1 = a', '1', 1, 0],
    ['error/field compared with a field', 'a = b', 'b', 1, 4],
    ['error/arithmetic', 'a = 1 + 2', '+', 1, 6],
    ['error/less-than a bool', 'a < true', 'true', 1, 4],
    ['error/contains a bool', 'a contains true', 'true', 1, 11],
    ['error/icontains a number', 'a icontains 1', '1', 1, 12],
    ['error/between mixing a number and a datetime', 'a between 1 and datetime(2024-01-01T00:00:00Z)', 'datetime(2024-01-01T00:00:00Z)', 1, 16],
    ['error/set function without an operation', 'anyOf(x)', '<EOF>', 1, 8],
    ['error/space before a set function parenthesis', 'anyOf (x) = 1', ' ', 1, 5],
    ['error/missing closing parenthesis', '(a = 1', '<EOF>', 1, 6],
    ['error/dangling and', 'a = 1 and', '<EOF>', 1, 9],
    ['error/two conditions without and', 'a = "x" b = 1', 'b', 1, 8],
    ['error/sort without by', 'a = 1 sort name', 'name', 1, 11],
    ['error/sort by nothing', 'sort by', '<EOF>', 1, 7],
    ['error/skip none', 'skip none', 'none', 1, 5],
    ['error/position on a later line', 'a = 1\nand b = ', '<EOF>', 2, 8],
    ['error/syntax error wins over a later bad datetime', 'a = 1 b = datetime(2024-02-30T00:00:00Z)', 'b', 1, 6],
  ];
  for (const [name, filter, symbol, line, column] of syntaxErrors) {
    it(name, () => assertInvalidFilter(filter, syntaxMessage(symbol, line, column)));
  }

  const decodeErrors: Array<[name: string, filter: string, message: string]> = [
    ['error/day that does not exist', 'createdAt = datetime(2024-02-30T00:00:00Z)', 'parsing time "2024-02-30T00:00:00Z": day out of range'],
    ['error/leap second', 'createdAt = datetime(2024-01-01T23:59:60Z)', 'parsing time "2024-01-01T23:59:60Z": second out of range'],
    ['error/two-digit year', 'createdAt = datetime(24-01-01T00:00:00Z)',
      'parsing time "24-01-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "24-01-01T00:00:00Z" as "2006"'],
    ['error/five-digit year', 'createdAt = datetime(20245-01-01t00:00:00z)',
      'parsing time "20245-01-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "5-01-01T00:00:00Z" as "-"'],
    ['error/float skip', 'skip 1.5', 'expected integer value for skip, but got 1.5'],
    ['error/float limit', 'limit 2.0', 'expected integer value for limit, but got 2.0'],
    ['error/number out of float range', 'a = 1e999',
      'could not parse number as float or int: int(strconv.ParseInt: parsing "1e999": invalid syntax) ' +
        'and float(strconv.ParseFloat: parsing "1e999": value out of range)'],
    ['error/first decoding error in text order', 'a = datetime(2024-04-31T00:00:00Z) skip 1.5', 'parsing time "2024-04-31T00:00:00Z": day out of range'],
    ['error/too deeply nested', Array.from({ length: MAX_NESTING + 1 }, () => 'a = 1').join(' and '),
      `filter nests more than ${MAX_NESTING} levels deep`],
    ['error/too many parentheses', `${'('.repeat(MAX_NESTING + 1)}a${')'.repeat(MAX_NESTING + 1)}`, `filter nests more than ${MAX_NESTING} levels deep`],
    ['error/too long', `name = "${'x'.repeat(MAX_FILTER_LENGTH)}"`, `filter is longer than ${MAX_FILTER_LENGTH} characters`],
  ];
  for (const [name, filter, message] of decodeErrors) {
    it(name, () => assertInvalidFilter(filter, message));
  }
});
