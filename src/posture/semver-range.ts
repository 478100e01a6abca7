/**
 * Strict semantic versions and the version-range grammar OS posture checks use (upstream's, auth.md §5.1):
 * comparators joined by spaces must all hold, alternatives are separated by `||`; operators `>`, `>=`,
 * `<`, `<=`, `=`, `==`, `!=`, `!` (none means `=`), optionally followed by spaces; `x` wildcards in the
 * minor or patch position (`1.x`, `1.2.x`). Versions are `MAJOR.MINOR.PATCH[-pre][+build]`, compared by
 * semver precedence (build metadata ignored).
 */

export interface SemVersion {
  major: number;
  minor: number;
  patch: number;
  pre: Array<string | number>;
}

const NUMERIC = /^(0|[1-9]\d*)$/;
const IDENT = /^[0-9A-Za-z-]+$/;

/** Parses a strict semantic version; undefined when it is not one. */
export function parseVersion(text: string): SemVersion | undefined {
  let rest = text;
  const plus = rest.indexOf('+');
  if (plus >= 0) {
    const build = rest.slice(plus + 1).split('.');
    if (build.some((b) => !IDENT.test(b))) return undefined;
    rest = rest.slice(0, plus);
  }
  let pre: Array<string | number> = [];
  const dash = rest.indexOf('-');
  if (dash >= 0) {
    const ids = rest.slice(dash + 1).split('.');
    for (const id of ids) {
      if (!IDENT.test(id)) return undefined;
      if (/^\d+$/.test(id) && !NUMERIC.test(id)) return undefined;
    }
    pre = ids.map((id) => (NUMERIC.test(id) ? Number(id) : id));
    rest = rest.slice(0, dash);
  }
  const parts = rest.split('.');
  if (parts.length !== 3 || parts.some((p) => !NUMERIC.test(p))) return undefined;
  const [major, minor, patch] = parts.map(Number) as [number, number, number];
  if (![major, minor, patch].every(Number.isSafeInteger)) return undefined;
  return { major, minor, patch, pre };
}

function compareIds(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'number') return -1;
  if (typeof b === 'number') return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Semver precedence: negative, zero or positive. */
export function compareVersions(a: SemVersion, b: SemVersion): number {
  const core = a.major - b.major || a.minor - b.minor || a.patch - b.patch;
  if (core !== 0) return Math.sign(core);
  if (a.pre.length === 0 || b.pre.length === 0) return a.pre.length === b.pre.length ? 0 : a.pre.length === 0 ? 1 : -1;
  for (let i = 0; i < Math.min(a.pre.length, b.pre.length); i++) {
    const c = compareIds(a.pre[i]!, b.pre[i]!);
    if (c !== 0) return Math.sign(c);
  }
  return Math.sign(a.pre.length - b.pre.length);
}

export type VersionRange = (v: SemVersion) => boolean;

const OPERATORS = ['>=', '<=', '!=', '==', '>', '<', '=', '!'] as const;
type Operator = (typeof OPERATORS)[number] | '';

/** Splits an AND part into comparators, gluing an operator to the version that follows it after spaces. */
function comparators(part: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const token of part.trim().split(/\s+/)) {
    if (token === '') continue;
    current += token;
    if (/^[<>=!]+$/.test(current)) continue;
    out.push(current);
    current = '';
  }
  if (current !== '') out.push(current);
  return out;
}

function comparator(text: string): VersionRange | undefined {
  const op: Operator = OPERATORS.find((o) => text.startsWith(o)) ?? '';
  const versionText = text.slice(op.length);
  const parts = versionText.split('.');
  let base: SemVersion | undefined;
  let next: SemVersion | undefined;
  if (parts.length >= 2 && parts[1] === 'x' && (parts.length === 2 || (parts.length === 3 && parts[2] === 'x'))) {
    if (!NUMERIC.test(parts[0]!)) return undefined;
    const major = Number(parts[0]);
    base = { major, minor: 0, patch: 0, pre: [] };
    next = { major: major + 1, minor: 0, patch: 0, pre: [] };
  } else if (parts.length === 3 && parts[2] === 'x') {
    if (!NUMERIC.test(parts[0]!) || !NUMERIC.test(parts[1]!)) return undefined;
    const major = Number(parts[0]);
    const minor = Number(parts[1]);
    base = { major, minor, patch: 0, pre: [] };
    next = { major, minor: minor + 1, patch: 0, pre: [] };
  } else {
    base = parseVersion(versionText);
    if (!base) return undefined;
  }
  const b = base;
  const cmp = (v: SemVersion, w: SemVersion) => compareVersions(v, w);
  if (next) {
    const n = next;
    switch (op) {
      case '>': return (v) => cmp(v, n) >= 0;
      case '>=': return (v) => cmp(v, b) >= 0;
      case '<': return (v) => cmp(v, b) < 0;
      case '<=': return (v) => cmp(v, n) < 0;
      case '!=': case '!': return (v) => cmp(v, b) < 0 || cmp(v, n) >= 0;
      default: return (v) => cmp(v, b) >= 0 && cmp(v, n) < 0;
    }
  }
  switch (op) {
    case '>': return (v) => cmp(v, b) > 0;
    case '>=': return (v) => cmp(v, b) >= 0;
    case '<': return (v) => cmp(v, b) < 0;
    case '<=': return (v) => cmp(v, b) <= 0;
    case '!=': case '!': return (v) => cmp(v, b) !== 0;
    default: return (v) => cmp(v, b) === 0;
  }
}

/** Parses a range; undefined when any part of it is not valid. */
export function parseRange(text: string): VersionRange | undefined {
  const alternatives: VersionRange[][] = [];
  for (const part of text.split('||')) {
    const list = comparators(part);
    if (list.length === 0) return undefined;
    const parsed: VersionRange[] = [];
    for (const c of list) {
      const r = comparator(c);
      if (!r) return undefined;
      parsed.push(r);
    }
    alternatives.push(parsed);
  }
  return (v) => alternatives.some((all) => all.every((r) => r(v)));
}

/** True when `version` is a strict semantic version inside `range` (an invalid range matches nothing). */
export function satisfies(version: string, range: string): boolean {
  const v = parseVersion(version);
  const r = parseRange(range);
  return v !== undefined && r !== undefined && r(v);
}
