/**
 * The posture data of one identity as the store holds it (auth.md §5.2): the latest OS, MAC and domain
 * responses and the process responses, shared by all of the identity's API sessions; per API session the
 * MFA pass time (`api_sessions.mfa_passed_at`) and the endpoint state (woken / unlocked times).
 */
import type { Sql } from '../store/store.ts';

interface ResponseBase {
  postureCheckId: string;
  lastUpdatedAt: string;
}

export interface OsData extends ResponseBase {
  type: string;
  version: string;
  build: string;
}

export interface MacData extends ResponseBase {
  /** Normalised: lower-case hex digits only. */
  addresses: string[];
}

export interface DomainData extends ResponseBase {
  domain: string;
}

export interface ProcessData extends ResponseBase {
  path: string;
  isRunning: boolean;
  /** Normalised like MAC addresses. */
  binaryHash: string;
  signerFingerprints: string[];
  seq: number;
}

export interface ApiSessionPosture {
  apiSessionId: string;
  passedMfaAt?: string;
  wokenAt?: string;
  unlockedAt?: string;
}

export interface PostureData {
  identityId: string;
  os?: OsData;
  mac?: MacData;
  domain?: DomainData;
  /** Every stored process response, oldest first. */
  processes: ProcessData[];
  /** The identity's live API sessions. */
  apiSessions: Map<string, ApiSessionPosture>;
  /** The SDK the identity last authenticated with (`type`, `version`, ...). */
  sdkInfo: Record<string, unknown>;
}

/** Lower-cases and keeps only hex digits (MAC addresses, hashes, fingerprints). */
export function cleanHex(value: string): string {
  return value.toLowerCase().replace(/[^a-f0-9]+/g, '');
}

function parseObject(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string' || text === '') return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export async function loadPostureData(q: Sql, identityId: string): Promise<PostureData> {
  const data: PostureData = { identityId, processes: [], apiSessions: new Map(), sdkInfo: {} };
  const responses = await q.all<{ type_id: string; posture_check_id: string; data: string; last_updated_at: string }>(
    'SELECT type_id, posture_check_id, data, last_updated_at FROM posture_responses WHERE identity_id = ?',
    [identityId],
  );
  for (const row of responses) {
    const base = { postureCheckId: row.posture_check_id, lastUpdatedAt: row.last_updated_at };
    const d = parseObject(row.data);
    if (row.type_id === 'OS') data.os = { ...base, type: String(d.type ?? ''), version: String(d.version ?? ''), build: String(d.build ?? '') };
    if (row.type_id === 'MAC') data.mac = { ...base, addresses: Array.isArray(d.addresses) ? (d.addresses as string[]) : [] };
    if (row.type_id === 'DOMAIN') data.domain = { ...base, domain: String(d.domain ?? '') };
  }
  const processes = await q.all(
    'SELECT posture_check_id, path, is_running, binary_hash, signer_fingerprints, last_updated_at, seq FROM posture_processes WHERE identity_id = ? ORDER BY seq',
    [identityId],
  );
  for (const row of processes) {
    data.processes.push({
      postureCheckId: row.posture_check_id as string,
      lastUpdatedAt: row.last_updated_at as string,
      path: row.path as string,
      isRunning: row.is_running === 1,
      binaryHash: row.binary_hash as string,
      signerFingerprints: JSON.parse(row.signer_fingerprints as string) as string[],
      seq: row.seq as number,
    });
  }
  const sessions = await q.all<{ id: string; mfa_passed_at: string | null; woken_at: string | null; unlocked_at: string | null }>(
    `SELECT a.id, a.mfa_passed_at, e.woken_at, e.unlocked_at FROM api_sessions a
     LEFT JOIN posture_endpoint_states e ON e.api_session_id = a.id WHERE a.identity_id = ? ORDER BY a.created_at, a.id`,
    [identityId],
  );
  for (const row of sessions) {
    data.apiSessions.set(row.id, {
      apiSessionId: row.id,
      ...(row.mfa_passed_at ? { passedMfaAt: row.mfa_passed_at } : {}),
      ...(row.woken_at ? { wokenAt: row.woken_at } : {}),
      ...(row.unlocked_at ? { unlockedAt: row.unlocked_at } : {}),
    });
  }
  const identity = await q.get<{ sdk_info: string }>('SELECT sdk_info FROM identities WHERE id = ?', [identityId]);
  data.sdkInfo = parseObject(identity?.sdk_info);
  return data;
}

/** The newest process response a client sent with this posture check id. */
export function processByCheckId(data: PostureData, checkId: string): ProcessData | undefined {
  let found: ProcessData | undefined;
  for (const p of data.processes) if (p.postureCheckId === checkId && (!found || p.seq > found.seq)) found = p;
  return found;
}

/** The newest process response for this exact path, whatever check id it carried. */
export function processByPath(data: PostureData, path: string): ProcessData | undefined {
  let found: ProcessData | undefined;
  for (const p of data.processes) if (p.path === path && path !== '' && (!found || p.seq > found.seq)) found = p;
  return found;
}

/** One process entry per posture check id (the newest), as the posture-data view lists them. */
export function processesByCheckId(data: PostureData): ProcessData[] {
  const byId = new Map<string, ProcessData>();
  for (const p of data.processes) {
    const cur = byId.get(p.postureCheckId);
    if (!cur || p.seq > cur.seq) byId.set(p.postureCheckId, p);
  }
  return [...byId.values()].sort((a, b) => a.seq - b.seq);
}
