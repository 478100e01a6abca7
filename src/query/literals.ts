/**
 * Decoding and rendering of string and number literals, the way upstream's Go code does it: strings are
 * unescaped by its multi-pass replace (so `\\n` ends up a newline — a quirk kept for compatibility),
 * numbers become int64 when they fit and float64 otherwise, a number compared with a string is compared as
 * Go's shortest plain decimal text, and literals in error messages are printed as Go's `%v` prints them.
 */
import { invalidFilter } from '../errors.ts';
import type { ArrayLiteral, Literal } from './ast.ts';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Upstream's `ParseZqlString`: strip the quotes, then replace escapes in this exact order. */
export function unescapeString(tokenText: string): string {
  return tokenText
    .slice(1, -1)
    .replaceAll('\\\\', '\\')
    .replaceAll('\\"', '"')
    .replaceAll('\\f', '\f')
    .replaceAll('\\n', '\n')
    .replaceAll('\\r', '\r')
    .replaceAll('\\t', '\t')
    .replaceAll('\\\\', '\\');
}

export type DecodedNumber = { kind: 'int'; value: bigint } | { kind: 'float'; value: number };

/** int64 if the text is an integer in range (Go `ParseInt`), else float64 (Go `ParseFloat`). */
export function decodeNumber(text: string): DecodedNumber {
  const isIntegerText = /^-?[0-9]+$/.test(text);
  if (isIntegerText) {
    const value = BigInt(text);
    if (value >= INT64_MIN && value <= INT64_MAX) return { kind: 'int', value };
  }
  const value = Number(text);
  if (!Number.isFinite(value)) {
    const intReason = isIntegerText ? 'value out of range' : 'invalid syntax';
    throw invalidFilter(
      `could not parse number as float or int: int(strconv.ParseInt: parsing "${text}": ${intReason}) ` +
        `and float(strconv.ParseFloat: parsing "${text}": value out of range)`,
    );
  }
  return { kind: 'float', value };
}

/** Shortest round-trip digits and decimal exponent of a finite, non-zero float (`d.ddd × 10^exp`). */
function shortestDigits(value: number): { digits: string; exponent: number } {
  const [mantissa, exp] = Math.abs(value).toExponential().split('e');
  return { digits: mantissa.replace('.', ''), exponent: Number(exp) };
}

/** Go's `strconv.FormatFloat(v, 'f', -1, 64)`: shortest digits, never an exponent. */
export function formatFloatPlain(value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const sign = value < 0 ? '-' : '';
  const { digits, exponent } = shortestDigits(value);
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  if (digits.length <= exponent + 1) return `${sign}${digits}${'0'.repeat(exponent + 1 - digits.length)}`;
  return `${sign}${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
}

/** Go's `%v` for a float64 (`%g` with shortest digits: exponent form below 1e-4 and from 1e6 up). */
export function formatFloatGo(value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const { digits, exponent } = shortestDigits(value);
  if (exponent >= -4 && exponent < 6) return formatFloatPlain(value);
  const sign = value < 0 ? '-' : '';
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const expSign = exponent < 0 ? '-' : '+';
  return `${sign}${mantissa}e${expSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
}

/** A number literal as the decimal text a string field is compared with. */
export function numberAsText(literal: DecodedNumber): string {
  return literal.kind === 'int' ? literal.value.toString() : formatFloatPlain(literal.value);
}

/** A literal as upstream prints it inside `operation … is not supported` messages. */
export function describeLiteral(literal: Literal): string {
  switch (literal.kind) {
    case 'string':
      return literal.value;
    case 'int':
      return literal.value.toString();
    case 'float':
      return formatFloatGo(literal.value);
    case 'datetime':
      return literal.value.display;
    case 'bool':
      return String(literal.value);
    case 'null':
      return 'null';
  }
}

export function describeArray(array: ArrayLiteral): string {
  return `[${array.values.map((value) => describeLiteral(value)).join(', ')}]`;
}
