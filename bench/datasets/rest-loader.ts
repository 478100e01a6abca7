/**
 * Loads the records of `generateDataset(size, seed)` into a running controller through its management REST API,
 * as an operator's script would — for a server the in-process loader of sized.ts cannot reach (the upstream
 * controller, bench/upstream.ts). Entities first (identities, services, edge routers with their role attributes),
 * then the three policy kinds with every `@name` replaced by the id the server gave that record, then the users:
 * password authenticators for the typical and the worst-case identity, and certificate users enrolled the way an
 * SDK is (`POST /enrollments` with method ott, then `POST /edge/client/v1/enroll?method=ott` with a CSR). Names,
 * user names and passwords are those of the in-process loader, so scenarios find the same records on either server
 * by name.
 */
import { fetchOnce, pool, type apiClient } from '../lib.ts';
import { CLIENT, MANAGEMENT } from '../scenarios/context.ts';
import { SIZED_USER_PASSWORD, WORST_NAMES, keyAndCsr, type EntityRecord, type GeneratedDataset } from './sized.ts';

type Api = ReturnType<typeof apiClient>;

/** Identities that get a certificate besides the typical and the worst-case one (as the in-process loader). */
const EXTRA_CERT_USERS = 2;
/** Names per `name in [...]` lookup. */
const LOOKUP_BATCH = 50;
/** POSTs of one record at most, and how long a create the server gave up waiting for may take to appear. */
const CREATE_ATTEMPTS = 3;
const APPEAR_TIMEOUT_MS = 60_000;

export interface RestUser {
  role: 'typical' | 'worst';
  identityName: string;
  username: string;
  password: string;
}

export interface RestCertUser {
  role: 'typical' | 'worst';
  identityName: string;
  /** The chain the enrollment returned (leaf first). */
  certPem: string;
  keyPem: string;
}

export interface RestLoadResult {
  /** Wall time of creating every record, ms. */
  loadMs: number;
  phasesMs: Record<string, number>;
  users: RestUser[];
  certUsers: RestCertUser[];
}

export interface RestLoadTarget {
  /** Logged in as an admin. */
  api: Api;
  port: number;
  ca: string;
}

/** Creates every record of `generated`; requests run `concurrency` at a time. Throws on the first refused create. */
export async function loadThroughApi(target: RestLoadTarget, generated: GeneratedDataset, concurrency: number, log: (line: string) => void): Promise<RestLoadResult> {
  const { api } = target;
  const ids = new Map<string, string>();
  const phasesMs: Record<string, number> = {};
  const started = performance.now();
  let phaseStart = started;
  const phase = (name: string, count: number) => {
    const now = performance.now();
    phasesMs[name] = Math.round(now - phaseStart);
    log(`  ${count} ${name} in ${((now - phaseStart) / 1000).toFixed(1)} s (${Math.round(count / ((now - phaseStart) / 1000))}/s)`);
    phaseStart = now;
  };
  const create = async <T extends { name: string }>(path: string, records: readonly T[], body: (r: T) => unknown, inFlight = concurrency) => {
    let done = 0;
    await pool(records, inFlight, async (r) => {
      ids.set(r.name, await createOne(api, path, r.name, body(r)));
      if (++done % (records.length > 5000 ? 5000 : 25) === 0) log(`    ${path}: ${done}/${records.length} (${((performance.now() - phaseStart) / 1000).toFixed(0)} s)`);
    });
    phase(path, records.length);
  };
  const resolve = (roles: readonly string[]) =>
    roles.map((r) => {
      if (!r.startsWith('@')) return r;
      const id = ids.get(r.slice(1));
      if (!id) throw new Error(`role ${r} names no created record`);
      return `@${id}`;
    });

  await create('services', generated.services, (r: EntityRecord) => ({ name: r.name, encryptionRequired: true, roleAttributes: r.roleAttributes }));
  await create('edge-routers', generated.edgeRouters, (r: EntityRecord) => ({ name: r.name, isTunnelerEnabled: false, roleAttributes: r.roleAttributes }));
  await create('identities', generated.identities, (r: EntityRecord) => ({ name: r.name, type: 'User', isAdmin: false, roleAttributes: r.roleAttributes }));
  // Policies last, as the in-process loader: each is evaluated once against every entity. One at a time: upstream
  // evaluates a policy's members inside its write, so at large several in flight only queue until they time out.
  await create('service-policies', generated.servicePolicies, (p) => ({ ...p, identityRoles: resolve(p.identityRoles), serviceRoles: resolve(p.serviceRoles), postureCheckRoles: [] }), 1);
  await create('edge-router-policies', generated.edgeRouterPolicies, (p) => ({ ...p, identityRoles: resolve(p.identityRoles), edgeRouterRoles: resolve(p.edgeRouterRoles) }), 1);
  await create('service-edge-router-policies', generated.serviceEdgeRouterPolicies, (p) => ({ ...p, serviceRoles: resolve(p.serviceRoles), edgeRouterRoles: resolve(p.edgeRouterRoles) }), 1);

  const typicalName = generated.typicalIdentityName;
  const worstName = WORST_NAMES.identity;
  const users: RestUser[] = [];
  for (const [role, identityName, username] of [
    ['typical', typicalName, 'bench-typical'],
    ['worst', worstName, 'bench-worst'],
  ] as const) {
    await api.must('POST', `${MANAGEMENT}/authenticators`, { method: 'updb', identityId: ids.get(identityName), username, password: SIZED_USER_PASSWORD }, 201);
    users.push({ role, identityName, username, password: SIZED_USER_PASSWORD });
  }
  const extra = generated.identities
    .filter((r) => r.name !== typicalName && r.name !== worstName)
    .slice(0, EXTRA_CERT_USERS)
    .map((r) => ['typical', r.name] as const);
  const certUsers: RestCertUser[] = [];
  for (const [role, identityName] of [['typical', typicalName] as const, ['worst', worstName] as const, ...extra]) {
    certUsers.push({ role, identityName, ...(await enrollOtt(target, ids.get(identityName)!)) });
  }
  phase('users', users.length + certUsers.length);
  return { loadMs: Math.round(performance.now() - started), phasesMs, users, certUsers };
}

/**
 * Creates one record and returns its id. Upstream answers 503 TIMEOUT when a write waited too long for its turn, while
 * the write itself may still be applied: the record is then looked up by name until it appears (bounded; lookups
 * answered 503/429 while upstream is still busy count as not yet), and only a record that never appears is posted
 * again.
 */
async function createOne(api: Api, collection: string, name: string, body: unknown): Promise<string> {
  const byName = `${MANAGEMENT}/${collection}?filter=${encodeURIComponent(`name = ${JSON.stringify(name)}`)}`;
  for (let attempt = 1; ; attempt++) {
    const r = await api.call('POST', `${MANAGEMENT}/${collection}`, body);
    if (r.status === 201) return r.json.data.id as string;
    if ((r.status !== 503 && r.status !== 429) || attempt === CREATE_ATTEMPTS) {
      throw new Error(`POST ${MANAGEMENT}/${collection} (${name}): ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
    }
    const deadline = performance.now() + APPEAR_TIMEOUT_MS;
    while (performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      // Still busy with the write: the lookup may time out as well; ask again.
      const look = await api.call('GET', byName);
      if (look.status === 503 || look.status === 429) continue;
      if (look.status !== 200) throw new Error(`GET ${byName}: ${look.status} ${JSON.stringify(look.json).slice(0, 300)}`);
      const found = look.json.data as Array<{ id: string }>;
      if (found[0]) return found[0].id;
    }
  }
}

/** Gives an existing identity a certificate: an ott enrollment redeemed with a fresh EC P-256 CSR. */
export async function enrollOtt(target: RestLoadTarget, identityId: string): Promise<{ certPem: string; keyPem: string }> {
  const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
  const created = await target.api.must('POST', `${MANAGEMENT}/enrollments`, { method: 'ott', identityId, expiresAt }, 201);
  const enrollment = await target.api.must('GET', `${MANAGEMENT}/enrollments/${created.data.id}`, undefined, 200);
  const token = enrollment.data.token as string | undefined;
  if (!token) throw new Error(`enrollment ${created.data.id} has no token`);
  const { keyPem, csrPem } = await keyAndCsr(identityId);
  const r = await fetchOnce(target.port, target.ca, 'POST', `${CLIENT}/enroll?method=ott&token=${encodeURIComponent(token)}`, { 'content-type': 'application/x-pem-file', accept: 'application/json' }, csrPem);
  if (r.status !== 200) throw new Error(`ott enrollment of ${identityId}: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
  return { certPem: (JSON.parse(r.body.toString('utf8')) as { data: { cert: string } }).data.cert, keyPem };
}

/** The ids of records of a management collection (`identities`, `services`, …) by name; throws when one is missing. */
export async function idsByName(api: Api, collection: string, names: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < names.length; i += LOOKUP_BATCH) {
    const batch = names.slice(i, i + LOOKUP_BATCH);
    const filter = `name in [${batch.map((n) => JSON.stringify(n)).join(', ')}]`;
    const page = await api.must('GET', `${MANAGEMENT}/${collection}?limit=${LOOKUP_BATCH}&filter=${encodeURIComponent(filter)}`, undefined, 200);
    for (const r of page.data as Array<{ id: string; name: string }>) out.set(r.name, r.id);
  }
  const missing = names.filter((n) => !out.has(n));
  if (missing.length) throw new Error(`${collection}: no record named ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` (+${missing.length - 3})` : ''}`);
  return out;
}
