/**
 * Recursive-descent parser: tokens → untyped AST, following upstream's grammar (ZitiQl.g4) including the
 * parts that surprise people. `and` and `or` share one precedence level and group to the right, and `not`
 * takes everything after it (`not A and B` is `not (A and B)`), because upstream's generated parser reads
 * the right operand of and/or, and the operand of not, as a whole expression. Whitespace tokens are kept
 * so the same places require it (`x=1 and(y=2)` fails). The first problem is reported with upstream's
 * syntax error text. Literal decoding errors (bad datetime, skip 1.5) wait until the syntax is known
 * good, because upstream reports them only while building its tree from a successful parse.
 */
import { invalidFilter } from '../errors.ts';
import type {
  ArrayLiteral, CompareOp, DatetimeLiteral, Expr, Lhs, Literal, NumberLiteral, Position, Query, SetRef,
  SortField, StringLiteral,
} from './ast.ts';
import { parseDatetimeLiteral, type DatetimeValue } from './datetime.ts';
import { Lexer, syntaxError, type Token, type TokenKind } from './lexer.ts';
import { decodeNumber, unescapeString, type DecodedNumber } from './literals.ts';

/** Longer than any URL a client can send; bounds the work one request can ask for. */
export const MAX_FILTER_LENGTH = 16_384;
/** Nesting bound for and/or/not/parentheses: keeps recursion and SQLite's expression depth (1000) safe. */
export const MAX_NESTING = 200;

const COMPARISON_VALUES: Partial<Record<TokenKind, readonly TokenKind[]>> = {
  LT: ['STRING', 'NUMBER', 'DATETIME'],
  GT: ['STRING', 'NUMBER', 'DATETIME'],
  EQ: ['STRING', 'NUMBER', 'DATETIME', 'BOOL', 'NULL'],
  CONTAINS: ['STRING', 'NUMBER'],
  ICONTAINS: ['STRING'],
};

const PLACEHOLDER_DATETIME: DatetimeValue = { floor: '', ceil: '', exact: true, display: '' };

/** Parses a whole filter (`start` rule). The caller substitutes `true` for an empty filter. */
export function parseFilter(text: string): Query {
  if (text.length > MAX_FILTER_LENGTH) {
    throw invalidFilter(`filter is longer than ${MAX_FILTER_LENGTH} characters`);
  }
  return new Parser(new Lexer(text)).parseStart();
}

function positionOf(token: Token): Position {
  return { line: token.line, column: token.column };
}

function isNegated(token: Token): boolean {
  return token.text.toLowerCase().startsWith('not');
}

class Parser {
  private index = 0;
  private depth = 0;
  /** The first literal-decoding error, raised once the whole text has parsed. */
  private deferred: Error | undefined;

  constructor(private readonly lexer: Lexer) {}

  parseStart(): Query {
    this.skipWs();
    const query = this.parseQuery();
    this.skipWs();
    this.expect('EOF');
    if (this.deferred) throw this.deferred;
    return query;
  }

  // ---- token helpers -------------------------------------------------------------------------------

  private peek(): Token {
    return this.lexer.at(this.index);
  }

  private next(): Token {
    const token = this.lexer.at(this.index);
    if (token.kind !== 'EOF') this.index += 1;
    return token;
  }

  private expect(...kinds: TokenKind[]): Token {
    if (!kinds.includes(this.peek().kind)) throw syntaxError(this.peek());
    return this.next();
  }

  private skipWs(): number {
    let count = 0;
    while (this.peek().kind === 'WS') {
      this.next();
      count += 1;
    }
    return count;
  }

  private requireWs(): void {
    if (this.skipWs() === 0) throw syntaxError(this.peek());
  }

  /** The first token after any whitespace, and how much whitespace precedes it; consumes nothing. */
  private lookPastWs(): { token: Token; ws: number } {
    let i = this.index;
    while (this.lexer.at(i).kind === 'WS') i += 1;
    return { token: this.lexer.at(i), ws: i - this.index };
  }

  /** For `(WS+ X)?`: consumes the whitespace only when at least one WS is followed by one of `kinds`. */
  private wsThen(...kinds: TokenKind[]): boolean {
    const { token, ws } = this.lookPastWs();
    if (ws === 0 || !kinds.includes(token.kind)) return false;
    this.skipWs();
    return true;
  }

  private decode<T>(decodeValue: () => T, fallback: T): T {
    try {
      return decodeValue();
    } catch (error) {
      this.deferred ??= error as Error;
      return fallback;
    }
  }

  // ---- query: predicate, then sort by, skip, limit -------------------------------------------------

  private parseQuery(): Query {
    const start = this.peek();
    const startsWithClause = ['SORT', 'SKIP', 'LIMIT'].includes(start.kind);
    const query: Query = {
      predicate: startsWithClause ? { kind: 'constant', value: true, pos: positionOf(start) } : this.parseBoolExpr(),
      sort: [],
    };
    // Each clause needs whitespace before it unless it is the first thing in the query.
    let first = startsWithClause;
    const clauseAhead = (kind: TokenKind) => (first ? this.peek().kind === kind : this.wsThen(kind));
    if (clauseAhead('SORT')) {
      query.sort = this.parseSortBy();
      first = false;
    }
    if (clauseAhead('SKIP')) {
      query.skip = this.parseSkip();
      first = false;
    }
    if (clauseAhead('LIMIT')) query.limit = this.parseLimit();
    return query;
  }

  private parseSortBy(): SortField[] {
    this.expect('SORT');
    this.requireWs();
    this.expect('BY');
    this.requireWs();
    const fields = [this.parseSortField()];
    while (this.lookPastWs().token.kind === 'COMMA') {
      this.skipWs();
      this.next();
      this.skipWs();
      fields.push(this.parseSortField());
    }
    return fields;
  }

  private parseSortField(): SortField {
    const name = this.expect('IDENTIFIER');
    const ascending = this.wsThen('ASC', 'DESC') ? this.next().kind === 'ASC' : true;
    return { name: name.text, ascending, pos: positionOf(name) };
  }

  private parseSkip(): Query['skip'] {
    this.expect('SKIP');
    this.requireWs();
    const token = this.expect('NUMBER');
    return { value: this.decode(() => this.integerFor('skip', token), 0n), pos: positionOf(token) };
  }

  private parseLimit(): Query['limit'] {
    this.expect('LIMIT');
    this.requireWs();
    const token = this.expect('NONE', 'NUMBER');
    const value = token.kind === 'NONE' ? 'none' : this.decode(() => this.integerFor('limit', token), 0n);
    return { value, pos: positionOf(token) };
  }

  private integerFor(clause: string, token: Token): bigint {
    const number = decodeNumber(token.text);
    if (number.kind !== 'int') throw invalidFilter(`expected integer value for ${clause}, but got ${token.text}`);
    return number.value;
  }

  // ---- boolean expressions -------------------------------------------------------------------------

  /** `unary ( WS+ (and|or) WS+ boolExpr )?` — the right operand is a whole expression (right grouping). */
  private parseBoolExpr(): Expr {
    if (++this.depth > MAX_NESTING) throw invalidFilter(`filter nests more than ${MAX_NESTING} levels deep`);
    const left = this.parseUnary();
    let result = left;
    if (this.wsThen('AND', 'OR')) {
      const kind = this.next().kind === 'AND' ? 'and' : 'or';
      this.requireWs();
      result = { kind, left, right: this.parseBoolExpr(), pos: left.pos };
    }
    this.depth -= 1;
    return result;
  }

  private parseUnary(): Expr {
    const token = this.peek();
    const pos = positionOf(token);
    switch (token.kind) {
      case 'NOT':
        this.next();
        this.requireWs();
        return { kind: 'not', operand: this.parseBoolExpr(), pos };
      case 'LPAREN': {
        this.next();
        this.skipWs();
        const inner = this.parseBoolExpr();
        this.skipWs();
        this.expect('RPAREN');
        return inner;
      }
      case 'BOOL':
        this.next();
        return { kind: 'constant', value: token.text.toLowerCase() === 'true', pos };
      case 'IS_EMPTY':
        this.next();
        return { kind: 'isEmpty', set: this.parseSetArgument(), pos };
      case 'IDENTIFIER': {
        this.next();
        const lhs: Lhs = { kind: 'field', name: token.text, pos };
        return this.parseOperation(lhs) ?? { kind: 'symbol', name: token.text, pos };
      }
      case 'ALL_OF':
      case 'ANY_OF':
      case 'COUNT': {
        const lhs = this.parseSetFunction();
        const operation = this.parseOperation(lhs);
        if (!operation) throw syntaxError(this.lookPastWs().token);
        return operation;
      }
      default:
        throw syntaxError(token);
    }
  }

  private parseSetFunction(): Lhs {
    const token = this.next();
    const pos = positionOf(token);
    if (token.kind === 'COUNT') return { kind: 'count', set: this.parseSetArgument(), pos };
    this.expect('LPAREN');
    this.skipWs();
    const name = this.expect('IDENTIFIER').text;
    this.skipWs();
    this.expect('RPAREN');
    return { kind: token.kind === 'ALL_OF' ? 'allOf' : 'anyOf', name, pos };
  }

  /** `( WS* (IDENT | from IDENT where query) WS* )` for count and isEmpty. */
  private parseSetArgument(): SetRef {
    this.expect('LPAREN');
    this.skipWs();
    const token = this.expect('IDENTIFIER', 'FROM');
    let set: SetRef;
    if (token.kind === 'IDENTIFIER') {
      set = { kind: 'set', name: token.text, pos: positionOf(token) };
    } else {
      this.requireWs();
      const name = this.expect('IDENTIFIER').text;
      this.requireWs();
      this.expect('WHERE');
      this.requireWs();
      set = { kind: 'subQuery', name, query: this.parseQuery(), pos: positionOf(token) };
    }
    this.skipWs();
    this.expect('RPAREN');
    return set;
  }

  /** The operator and right side after a left-hand side, or undefined when none follows. */
  private parseOperation(lhs: Lhs): Expr | undefined {
    const { token, ws } = this.lookPastWs();
    const pos = lhs.pos;
    if (token.kind in COMPARISON_VALUES) {
      this.skipWs();
      const op = this.next();
      if (op.kind === 'CONTAINS' || op.kind === 'ICONTAINS') this.requireWs();
      else this.skipWs();
      const value = this.parseLiteral(COMPARISON_VALUES[op.kind] ?? []);
      return { kind: 'compare', lhs, op: this.compareOp(op), value, pos };
    }
    if (ws === 0 || (token.kind !== 'IN' && token.kind !== 'BETWEEN')) return undefined;
    this.skipWs();
    const op = this.next();
    this.requireWs();
    if (op.kind === 'IN') return { kind: 'in', lhs, negated: isNegated(op), values: this.parseArray(), pos };
    const lower = this.parseLiteral(['NUMBER', 'DATETIME']);
    this.requireWs();
    this.expect('AND');
    this.requireWs();
    const upper = this.parseLiteral([lower.kind === 'datetime' ? 'DATETIME' : 'NUMBER']);
    return { kind: 'between', lhs, negated: isNegated(op), lower, upper, pos };
  }

  private compareOp(token: Token): CompareOp {
    const negation = isNegated(token) ? 'not ' : '';
    if (token.kind === 'CONTAINS') return `${negation}contains`;
    if (token.kind === 'ICONTAINS') return `${negation}icontains`;
    return token.text as CompareOp;
  }

  // ---- literals ------------------------------------------------------------------------------------

  private parseLiteral(allowed: readonly TokenKind[]): Literal {
    const token = this.expect(...allowed);
    const pos = positionOf(token);
    switch (token.kind) {
      case 'STRING':
        return { kind: 'string', value: unescapeString(token.text), pos };
      case 'NUMBER':
        return { ...this.decode<DecodedNumber>(() => decodeNumber(token.text), { kind: 'int', value: 0n }), pos };
      case 'DATETIME':
        return { kind: 'datetime', value: this.decode(() => parseDatetimeLiteral(token.text), PLACEHOLDER_DATETIME), pos };
      case 'BOOL':
        return { kind: 'bool', value: token.text.toLowerCase() === 'true', pos };
      default:
        return { kind: 'null', pos };
    }
  }

  /** `[ WS* v (WS* , WS* v)* WS* ]` with every element of the first element's kind. */
  private parseArray(): ArrayLiteral {
    const pos = positionOf(this.expect('LBRACKET'));
    this.skipWs();
    const first = this.parseLiteral(['STRING', 'NUMBER', 'DATETIME']);
    const elementKind: TokenKind = first.kind === 'string' ? 'STRING' : first.kind === 'datetime' ? 'DATETIME' : 'NUMBER';
    const values = [first];
    while (this.lookPastWs().token.kind === 'COMMA') {
      this.skipWs();
      this.next();
      this.skipWs();
      values.push(this.parseLiteral([elementKind]));
    }
    this.skipWs();
    this.expect('RBRACKET');
    if (first.kind === 'string') return { kind: 'strings', values: values as StringLiteral[], pos };
    if (first.kind === 'datetime') return { kind: 'datetimes', values: values as DatetimeLiteral[], pos };
    return { kind: 'numbers', values: promoteNumbers(values as NumberLiteral[]), pos };
  }
}

/** Upstream turns a number array holding any float into an all-float array. */
function promoteNumbers(values: NumberLiteral[]): NumberLiteral[] {
  if (values.every((v) => v.kind === 'int')) return values;
  return values.map((v) => (v.kind === 'int' ? { kind: 'float', value: Number(v.value), pos: v.pos } : v));
}
