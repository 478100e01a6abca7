/**
 * Go's duration syntax (`time.ParseDuration`), which upstream accepts wherever a duration is a string:
 * an optional sign, then one or more decimal numbers each with a unit (`ns`, `us`/`µs`/`μs`, `ms`, `s`,
 * `m`, `h`), e.g. `10m`, `1h30m`, `1.5h`; a bare `0` is allowed. Failures carry Go's error text, which
 * upstream puts in the field error's reason.
 */
const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3,
  'μs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

export class DurationError extends Error {}

/** Milliseconds of a Go duration string; throws DurationError with Go's message. */
export function parseGoDuration(text: string): number {
  const quoted = JSON.stringify(text);
  const invalid = () => new DurationError(`time: invalid duration ${quoted}`);
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s.startsWith('-') ? -1 : 1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw invalid();
  let total = 0;
  while (s !== '') {
    const number = /^(\d*)(?:\.(\d*))?/.exec(s)!;
    const [whole, intPart, fracPart] = number;
    if (intPart === '' && (fracPart === undefined || fracPart === '')) throw invalid();
    s = s.slice(whole.length);
    const unit = /^[^0-9.]*/.exec(s)![0];
    if (unit === '') throw new DurationError(`time: missing unit in duration ${quoted}`);
    const factor = unitMs[unit];
    if (factor === undefined) throw new DurationError(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    s = s.slice(unit.length);
    total += Number(`${intPart || '0'}.${fracPart ?? '0'}`) * factor;
    // Go durations are int64 nanoseconds: about 292 years.
    if (total > 9_223_372_036_854) throw invalid();
  }
  return sign * total;
}
