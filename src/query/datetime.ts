/**
 * Datetime literals: `datetime(<RFC 3339>)` → the text our store keeps (`YYYY-MM-DDTHH:MM:SS.mmmZ`, UTC,
 * exactly three fraction digits), so SQL can compare instants as strings. The lexer has already checked the
 * shape; this file applies what Go's `time.Parse(time.RFC3339, …)` adds upstream — a four-digit year, no
 * leap second, a day that exists in its month — and reproduces Go's error texts. Stored values have
 * millisecond precision, so a literal with a sub-millisecond remainder is kept as both its floor and its
 * ceiling: the SQL side picks whichever keeps each comparison exact.
 */
import { invalidFilter } from '../errors.ts';

export interface DatetimeValue {
  /** Stored-format text of the instant rounded down to the millisecond. */
  floor: string;
  /** Stored-format text of the instant rounded up to the millisecond (equals `floor` when `exact`). */
  ceil: string;
  /** True when the instant has no sub-millisecond remainder, so it can equal a stored value. */
  exact: boolean;
  /** The value as Go prints a `time.Time` (`2024-01-02 03:04:05 +0000 UTC`), for error messages. */
  display: string;
}

/**
 * Instants outside years 0000–9999 cannot be written in the stored format; these stand-ins sort before
 * ('') or after ('~') every stored value, which is all a comparison needs from them.
 */
const BEFORE_ALL_STORED = '';
const AFTER_ALL_STORED = '~';

const GO_LAYOUT = '2006-01-02T15:04:05Z07:00';
const WRAPPER = /^[ \n\t\r]*datetime\([ \n\t\r]*(.*?)[ \n\t\r]*\)[ \n\t\r]*$/s;
const PARTS = /^([0-9]+)-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(Z|([+-])([0-9]{2}):([0-9]{2}))$/;

interface DatetimeParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** Nanoseconds: Go keeps the first nine fraction digits and ignores the rest. */
  nanos: number;
  /** Offset east of UTC in minutes. */
  offsetMinutes: number;
}

/** Decodes a DATETIME token (`datetime( … )`), throwing INVALID_FILTER with Go's parse error text. */
export function parseDatetimeLiteral(tokenText: string): DatetimeValue {
  const inner = WRAPPER.exec(tokenText)?.[1] ?? tokenText;
  // Upstream upper-cases the first `z` and the first `t` before handing the text to Go.
  const text = inner.replace('z', 'Z').replace('t', 'T');
  const parts = splitParts(text);
  const wholeMillis = utcMillis(parts);
  const exact = parts.nanos % 1_000_000 === 0;
  return {
    floor: toStoredText(wholeMillis),
    ceil: toStoredText(exact ? wholeMillis : wholeMillis + 1),
    exact,
    display: goTimeString(parts),
  };
}

/** Formats epoch milliseconds as stored text; out-of-range instants become the sort-order stand-ins. */
export function toStoredText(epochMillis: number): string {
  const date = new Date(epochMillis);
  const year = date.getUTCFullYear();
  if (year < 0) return BEFORE_ALL_STORED;
  if (year > 9999) return AFTER_ALL_STORED;
  return date.toISOString();
}

function goParseError(text: string, message: string): Error {
  return invalidFilter(`parsing time "${text}"${message}`);
}

function goCannotParse(text: string, valueElem: string, layoutElem: string): Error {
  return goParseError(text, ` as "${GO_LAYOUT}": cannot parse "${valueElem}" as "${layoutElem}"`);
}

/** Applies Go's checks in the order Go's parser meets them: year width, seconds range, then day-of-month. */
function splitParts(text: string): DatetimeParts {
  const match = PARTS.exec(text);
  if (!match) throw goCannotParse(text, text, '2006');
  const [, yearText, month, day, hour, minute, second, fraction, zone, sign, offHour, offMinute] = match;
  if (yearText.length < 4) throw goCannotParse(text, text, '2006');
  if (yearText.length > 4) throw goCannotParse(text, text.slice(4), '-');
  if (Number(second) >= 60) throw goParseError(text, ': second out of range');
  const parts: DatetimeParts = {
    year: Number(yearText),
    month: Number(month),
    day: Number(day),
    hour: Number(hour),
    minute: Number(minute),
    second: Number(second),
    nanos: Number((fraction ?? '').slice(0, 9).padEnd(9, '0')),
    offsetMinutes: zone === 'Z' ? 0 : (sign === '-' ? -1 : 1) * (Number(offHour) * 60 + Number(offMinute)),
  };
  if (parts.day > daysInMonth(parts.year, parts.month)) throw goParseError(text, ': day out of range');
  return parts;
}

function daysInMonth(year: number, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0); // day 0 of the next month is the last day of this one
  return date.getUTCDate();
}

/** Epoch milliseconds, rounded down, of the instant the parts describe. */
function utcMillis(parts: DatetimeParts): number {
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0–99 onto 1900–1999.
  date.setUTCFullYear(parts.year, parts.month - 1, parts.day);
  date.setUTCHours(parts.hour, parts.minute, parts.second, Math.floor(parts.nanos / 1_000_000));
  return date.getTime() - parts.offsetMinutes * 60_000;
}

/** Go's `Time.String()` for a time parsed with a numeric offset: local fields, trimmed nanos, zone. */
function goTimeString(parts: DatetimeParts): string {
  const two = (n: number) => String(n).padStart(2, '0');
  const date = `${String(parts.year).padStart(4, '0')}-${two(parts.month)}-${two(parts.day)}`;
  const fraction = parts.nanos === 0 ? '' : `.${String(parts.nanos).padStart(9, '0').replace(/0+$/, '')}`;
  const time = `${two(parts.hour)}:${two(parts.minute)}:${two(parts.second)}${fraction}`;
  const abs = Math.abs(parts.offsetMinutes);
  const offset = `${parts.offsetMinutes < 0 ? '-' : '+'}${two(Math.floor(abs / 60))}${two(abs % 60)}`;
  // A zero offset resolves to UTC (the controller's zone); any other offset gets an unnamed fixed zone.
  const zone = parts.offsetMinutes === 0 ? 'UTC' : offset;
  return `${date} ${time} ${offset} ${zone}`;
}
