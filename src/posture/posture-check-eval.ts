/**
 * Evaluation of one posture check against an identity's posture data (auth.md §5.1), the MFA timeout
 * arithmetic the service `postureQueries` report (§5.4), and the failure record (actual / expected values)
 * kept for refused session requests (§5.5). Pure functions: the caller supplies the data and the time.
 */
import { compareVersions, parseRange, parseVersion } from './semver-range.ts';
import { processByCheckId, processByPath, type ApiSessionPosture, type PostureData, type ProcessData } from './posture-data.ts';

export interface PostureCheckDef {
  id: string;
  name: string;
  typeId: string;
  details: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  tags: Record<string, unknown>;
}

/** No timeout (non-MFA checks, MFA checks without one). */
export const NO_TIMEOUT = -1;
/** After a wake or unlock event, an MFA check with promptOnWake/promptOnUnlock fails once this has passed. */
export const MFA_PROMPT_GRACE_SECONDS = 300;
/** C SDKs from this version on are not "legacy" for `ignoreLegacyEndpoints`. */
const MIN_C_SDK = parseVersion('0.25.0')!;

interface OsEntry {
  type: string;
  versions: string[] | null;
}

interface ProcessSpec {
  osType: string;
  path: string;
  hashes?: string[];
  signerFingerprint?: string;
  signerFingerprints?: string[];
}

const ms = (iso: string | undefined) => (iso ? Date.parse(iso) : undefined);
const lower = (s: string) => s.toLowerCase();

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

// ---- MFA ---------------------------------------------------------------------------------------------------

export interface MfaSettings {
  timeoutSeconds: number;
  promptOnWake: boolean;
  promptOnUnlock: boolean;
  ignoreLegacyEndpoints: boolean;
}

export function mfaSettings(check: PostureCheckDef): MfaSettings {
  const d = check.details;
  const t = typeof d.timeoutSeconds === 'number' && d.timeoutSeconds > 0 ? d.timeoutSeconds : NO_TIMEOUT;
  return { timeoutSeconds: t, promptOnWake: d.promptOnWake === true, promptOnUnlock: d.promptOnUnlock === true, ignoreLegacyEndpoints: d.ignoreLegacyEndpoints === true };
}

/** A wake/unlock event after the MFA pass fails the check once it is older than the grace period. */
function passedOnEvent(prompt: boolean, session: ApiSessionPosture | undefined, eventAt: string | undefined, now: number): boolean {
  if (!prompt) return true;
  const passed = ms(session?.passedMfaAt);
  if (passed === undefined) return false;
  const event = ms(eventAt);
  if (event === undefined || event < passed) return true;
  return now - MFA_PROMPT_GRACE_SECONDS * 1000 < event;
}

function mfaTimedOut(m: MfaSettings, session: ApiSessionPosture | undefined, now: number): boolean {
  const passed = ms(session?.passedMfaAt);
  if (passed === undefined) return true;
  return m.timeoutSeconds !== NO_TIMEOUT && passed + m.timeoutSeconds * 1000 < now;
}

function evaluateMfa(m: MfaSettings, session: ApiSessionPosture | undefined, now: number): boolean {
  if (!session?.passedMfaAt) return false;
  if (mfaTimedOut(m, session, now)) return false;
  return passedOnEvent(m.promptOnWake, session, session.wokenAt, now) && passedOnEvent(m.promptOnUnlock, session, session.unlockedAt, now);
}

/** Legacy clients: anything but a C SDK of version 0.25.0 or later. */
function isLegacyClient(sdkInfo: Record<string, unknown>): boolean {
  if (sdkInfo.type !== 'ziti-sdk-c' || typeof sdkInfo.version !== 'string') return true;
  const v = parseVersion(sdkInfo.version);
  if (!v) return true;
  return compareVersions(v, MIN_C_SDK) < 0;
}

function secondsLeft(now: number, eventAt: number, graceSeconds: number): number {
  return Math.max(0, Math.trunc(graceSeconds - (now - eventAt) / 1000));
}

/** Seconds of the MFA check left for this API session: -1 without timeout, 0 without a pass. */
export function mfaTimeoutRemaining(m: MfaSettings, data: PostureData, apiSessionId: string | undefined, now: number): number {
  if (m.timeoutSeconds === NO_TIMEOUT) return NO_TIMEOUT;
  const session = apiSessionId ? data.apiSessions.get(apiSessionId) : undefined;
  const passed = ms(session?.passedMfaAt);
  if (!session || passed === undefined) return 0;
  if (m.ignoreLegacyEndpoints && isLegacyClient(data.sdkInfo)) return NO_TIMEOUT;
  let remaining = m.timeoutSeconds - Math.trunc((now - passed) / 1000);
  if (remaining <= 0) return 0;
  for (const [prompt, at] of [[m.promptOnWake, ms(session.wokenAt)], [m.promptOnUnlock, ms(session.unlockedAt)]] as const) {
    if (prompt && at !== undefined && at > passed) remaining = Math.min(remaining, secondsLeft(now, at, MFA_PROMPT_GRACE_SECONDS));
  }
  return remaining;
}

/** The newest wake/unlock time the check prompts on (shown as the MFA query's `updatedAt` when newer). */
export function mfaLastEventAt(m: MfaSettings, session: ApiSessionPosture | undefined): string | undefined {
  if (!session?.passedMfaAt) return undefined;
  let at: string | undefined;
  if (m.promptOnWake && session.wokenAt) at = session.wokenAt;
  if (m.promptOnUnlock && session.unlockedAt && (!at || Date.parse(session.unlockedAt) > Date.parse(at))) at = session.unlockedAt;
  return at;
}

// ---- per type ----------------------------------------------------------------------------------------------

function evaluateOs(check: PostureCheckDef, data: PostureData): boolean {
  if (!data.os) return false;
  const reported = lower(data.os.type);
  let entry: OsEntry | undefined;
  for (const os of (check.details.operatingSystems as OsEntry[] | undefined) ?? []) if (lower(os.type) === reported) entry = os;
  if (!entry) return false;
  const ranges = entry.versions ?? [];
  if (ranges.length === 0) return true;
  const version = parseVersion(data.os.version);
  if (!version) return false;
  return ranges.some((text) => parseRange(text)?.(version) ?? false);
}

function evaluateMac(check: PostureCheckDef, data: PostureData): boolean {
  const configured = stringList(check.details.macAddresses);
  return (data.mac?.addresses ?? []).some((a) => configured.includes(a));
}

function evaluateDomain(check: PostureCheckDef, data: PostureData): boolean {
  if (!data.domain) return false;
  const reported = lower(data.domain.domain);
  return stringList(check.details.domains).some((d) => lower(d) === reported);
}

function hashMatches(allowed: string[], reported: string): boolean {
  return allowed.length === 0 || allowed.some((h) => lower(h) === lower(reported));
}

function signerMatches(allowed: string[], reported: string[]): boolean {
  return allowed.length === 0 || allowed.some((s) => reported.some((r) => lower(r) === lower(s)));
}

function evaluateProcess(check: PostureCheckDef, data: PostureData): boolean {
  const spec = (check.details.process ?? {}) as ProcessSpec;
  const p = processByCheckId(data, check.id);
  if (!p || !p.isRunning) return false;
  const signer = typeof spec.signerFingerprint === 'string' && spec.signerFingerprint !== '' ? [spec.signerFingerprint] : [];
  return signerMatches(signer, p.signerFingerprints) && hashMatches(stringList(spec.hashes), p.binaryHash);
}

function processMultiPasses(spec: ProcessSpec, p: ProcessData | undefined): boolean {
  return !!p && p.isRunning && hashMatches(stringList(spec.hashes), p.binaryHash) && signerMatches(stringList(spec.signerFingerprints), p.signerFingerprints);
}

function evaluateProcessMulti(check: PostureCheckDef, data: PostureData): boolean {
  const specs = (check.details.processes as ProcessSpec[] | undefined) ?? [];
  if (check.details.semantic === 'AnyOf') {
    return specs.some((s) => s.path !== '' && processMultiPasses(s, processByPath(data, s.path)));
  }
  return specs.length > 0 && specs.every((s) => s.path !== '' && processMultiPasses(s, processByPath(data, s.path)));
}

/** Whether the check passes for this API session at `now` (ms since the epoch). */
export function evaluateCheck(check: PostureCheckDef, data: PostureData, apiSessionId: string | undefined, now: number): boolean {
  switch (check.typeId) {
    case 'OS':
      return evaluateOs(check, data);
    case 'MAC':
      return evaluateMac(check, data);
    case 'DOMAIN':
      return evaluateDomain(check, data);
    case 'PROCESS':
      return evaluateProcess(check, data);
    case 'PROCESS_MULTI':
      return evaluateProcessMulti(check, data);
    case 'MFA':
      return evaluateMfa(mfaSettings(check), apiSessionId ? data.apiSessions.get(apiSessionId) : undefined, now);
    default:
      return false;
  }
}

// ---- failure records ---------------------------------------------------------------------------------------

function processActual(p: ProcessData | undefined, withPath: boolean): Record<string, unknown> {
  return {
    hash: p?.binaryHash ?? '',
    isRunning: p?.isRunning ?? false,
    signerFingerprints: p?.signerFingerprints ?? [],
    ...(withPath && p ? { path: p.path } : {}),
  };
}

/** postureCheckFailure: the check, what the data showed and what the check expects. */
export function failureOf(check: PostureCheckDef, data: PostureData, apiSessionId: string | undefined, now: number): Record<string, unknown> {
  const base = { postureCheckId: check.id, postureCheckName: check.name, postureCheckType: check.typeId };
  const d = check.details;
  switch (check.typeId) {
    case 'OS':
      return {
        ...base,
        actualValue: { type: data.os?.type ?? '', version: data.os?.version ?? '' },
        expectedValue: ((d.operatingSystems as OsEntry[] | undefined) ?? []).map((os) => ({ type: os.type, versions: os.versions ?? [] })),
      };
    case 'MAC':
      return { ...base, actualValue: data.mac?.addresses ?? [], expectedValue: stringList(d.macAddresses) };
    case 'DOMAIN':
      return { ...base, actualValue: data.domain?.domain ?? '', expectedValue: stringList(d.domains) };
    case 'PROCESS':
      return { ...base, actualValue: processActual(processByCheckId(data, check.id), false), expectedValue: d.process ?? {} };
    case 'PROCESS_MULTI': {
      const specs = (d.processes as ProcessSpec[] | undefined) ?? [];
      const actual: Array<Record<string, unknown>> = [];
      for (const s of specs) {
        const p = processByPath(data, s.path);
        if (p) actual.push(processActual(p, true));
      }
      return { ...base, actualValue: actual, expectedValue: specs, semantic: d.semantic ?? 'AllOf' };
    }
    case 'MFA': {
      const m = mfaSettings(check);
      const session = apiSessionId ? data.apiSessions.get(apiSessionId) : undefined;
      const passedMfa = !!session?.passedMfaAt;
      return {
        ...base,
        actualValue: {
          passedMfa,
          passedOnUnlock: session ? passedOnEvent(m.promptOnUnlock, session, session.unlockedAt, now) : false,
          passedOnWake: session ? passedOnEvent(m.promptOnWake, session, session.wokenAt, now) : false,
          timedOut: mfaTimedOut(m, session, now),
        },
        expectedValue: { passedMfa: true, passedOnUnlock: m.promptOnUnlock, passedOnWake: m.promptOnWake, timedOut: false },
        criteria: {
          passedMfaAt: session?.passedMfaAt ?? null,
          timeoutRemainingSeconds: passedMfa ? mfaTimeoutRemaining(m, data, apiSessionId, now) : 0,
          timeoutSeconds: m.timeoutSeconds,
          unlockedAt: session?.unlockedAt ?? null,
          wokenAt: session?.wokenAt ?? null,
        },
      };
    }
    default:
      return base;
  }
}

/** Whether the API session passed MFA and no prompting event fails it (the posture-data view's flags). */
export function sessionMfaFlags(session: ApiSessionPosture, now: number): { passedOnWake: boolean; passedOnUnlock: boolean } {
  return {
    passedOnWake: passedOnEvent(true, session, session.wokenAt, now),
    passedOnUnlock: passedOnEvent(true, session, session.unlockedAt, now),
  };
}
