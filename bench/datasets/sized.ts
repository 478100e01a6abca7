/**
 * Sized benchmark datasets (`small`, `medium`, `large`, `many-services`) with upstream's perf-test entity
 * counts, generated from a seed and loaded in-process through the controller's own domain services.
 *
 * Two halves:
 * - `generateDataset(size, seed)` is pure: the same size and seed give the same records everywhere. Entities
 *   carry eight role attributes per kind, attribute k on exactly round(n × fraction_k) of them
 *   (fractions 1/2, 1/2, 1/3, 1/4, 1/5, 1/8, 1/10, 1/10; the two halves are complementary, so every entity
 *   has one of them). Policies select by those attributes (AnyOf/AllOf mix). Exactly one Dial service policy
 *   grants `#all` identities a tenth of the services. A worst-case identity, service and edge router, whose
 *   names sort last, are named by `@` in every policy that has a role list of their kind (the `#all` list
 *   includes them already), and one policy per kind spans both complementary halves for them, so the
 *   worst-case identity sees every service and every edge router. Records name entities in role lists as
 *   `@<name>`; the loader substitutes ids.
 * - `ensureSizedDataset(size, dataDir)` starts the controller on the data directory (port 0, loopback; with
 *   `databaseUrl`, on that PostgreSQL database, which must be empty) and creates every record through the same
 *   services the REST handlers call (access index, change marks and enrollments included), one transaction per
 *   record (each service call opens its own; on SQLite without fsync), then adds password and certificate users
 *   and writes `dataset.json`. An existing directory whose marker names the same size, seed and store is reused.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mulberry32 } from '../../test/support/prng.ts';
import type { SqliteStore } from '../../src/store/sqlite-store.ts';

export const SIZE_NAMES = ['small', 'medium', 'large', 'many-services'] as const;
export type SizeName = (typeof SIZE_NAMES)[number];

export interface SizeSpec {
  services: number;
  identities: number;
  edgeRouters: number;
  servicePolicies: number;
  edgeRouterPolicies: number;
  serviceEdgeRouterPolicies: number;
}

/** Upstream's perf-test sizes. Counts include the worst-case entities. */
export const SIZES: Record<SizeName, SizeSpec> = {
  small: { services: 20, identities: 100, edgeRouters: 10, servicePolicies: 10, edgeRouterPolicies: 10, serviceEdgeRouterPolicies: 10 },
  medium: { services: 100, identities: 5_000, edgeRouters: 100, servicePolicies: 50, edgeRouterPolicies: 50, serviceEdgeRouterPolicies: 25 },
  large: { services: 2_000, identities: 100_000, edgeRouters: 500, servicePolicies: 250, edgeRouterPolicies: 250, serviceEdgeRouterPolicies: 100 },
  'many-services': {
    services: 10_000,
    identities: 16_000,
    edgeRouters: 100,
    servicePolicies: 100,
    edgeRouterPolicies: 100,
    serviceEdgeRouterPolicies: 100,
  },
};

/** Share of the entities of a kind that carry role attribute k (k = 1..8). */
export const ATTRIBUTE_FRACTIONS = [1 / 2, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 8, 1 / 10, 1 / 10] as const;

export const DEFAULT_SEED = 0x51ed_5eed;

export type EntityKind = 'identity' | 'service' | 'edgeRouter';

/** Role attribute names: `identity-role-1` … `identity-role-8`, `service-role-*`, `router-role-*`. */
export function attributeName(kind: EntityKind, k: number): string {
  return `${kind === 'edgeRouter' ? 'router' : kind}-role-${k}`;
}

/** How many entities of a kind of n carry attribute k (1-based): round(n × fraction_k). */
export function attributeCount(n: number, k: number): number {
  return Math.round(n * ATTRIBUTE_FRACTIONS[k - 1]!);
}

export const WORST_NAMES: Record<EntityKind, string> = {
  identity: 'zzzz-worst-identity',
  service: 'zzzz-worst-service',
  edgeRouter: 'zzzz-worst-router',
};

export interface EntityRecord {
  name: string;
  roleAttributes: string[];
}

type Semantic = 'AnyOf' | 'AllOf';

export interface ServicePolicyRecord {
  name: string;
  type: 'Dial' | 'Bind';
  semantic: Semantic;
  identityRoles: string[];
  serviceRoles: string[];
}

export interface EdgeRouterPolicyRecord {
  name: string;
  semantic: Semantic;
  identityRoles: string[];
  edgeRouterRoles: string[];
}

export interface ServiceEdgeRouterPolicyRecord {
  name: string;
  semantic: Semantic;
  serviceRoles: string[];
  edgeRouterRoles: string[];
}

export interface GeneratedDataset {
  size: SizeName;
  seed: number;
  /** Entities in creation order; the worst-case one of each kind is the last element. */
  identities: EntityRecord[];
  services: EntityRecord[];
  edgeRouters: EntityRecord[];
  servicePolicies: ServicePolicyRecord[];
  edgeRouterPolicies: EdgeRouterPolicyRecord[];
  serviceEdgeRouterPolicies: ServiceEdgeRouterPolicyRecord[];
  /** Name of the single `#all` Dial service policy. */
  allDialPolicyName: string;
  /** The identity the client scenarios use as "typical": median visible services among a sample. */
  typicalIdentityName: string;
  /** Services (Dial or Bind) each probe identity may use, as the policies above define it. */
  typicalServiceCount: number;
  worstServiceCount: number;
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const widthFor = (n: number) => Math.max(4, String(n).length);

/**
 * Which entities (indexes into 0..n-1) carry each attribute: exact counts; attribute 2 is the complement
 * of attribute 1 (plus, for an odd n, one entity of attribute 1), the others independent random subsets.
 */
function spreadAttributes(n: number, rand: () => number): Array<Set<number>> {
  const shuffled = () => {
    const order = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      const t = order[i]!;
      order[i] = order[j]!;
      order[j] = t;
    }
    return order;
  };
  const sets: Array<Set<number>> = [];
  const halves = shuffled();
  const first = attributeCount(n, 1);
  const second = attributeCount(n, 2);
  sets.push(new Set(halves.slice(0, first)));
  // The complement, topped up from the start of the first half when the two counts exceed n.
  sets.push(new Set([...halves.slice(first), ...halves.slice(0, Math.max(0, second - (n - first)))]));
  for (let k = 3; k <= ATTRIBUTE_FRACTIONS.length; k++) sets.push(new Set(shuffled().slice(0, attributeCount(n, k))));
  return sets;
}

function entities(kind: EntityKind, n: number, rand: () => number, nameOf: (i: number) => string): EntityRecord[] {
  const sets = spreadAttributes(n, rand);
  return Array.from({ length: n }, (_, i) => ({
    name: i === n - 1 ? WORST_NAMES[kind] : nameOf(i + 1),
    roleAttributes: sets.flatMap((set, k) => (set.has(i) ? [attributeName(kind, k + 1)] : [])),
  }));
}

/** Picks `count` distinct attribute numbers out of `from`. */
function pickAttributes(rand: () => number, from: readonly number[], count: number): number[] {
  const pool = [...from];
  const out: number[] = [];
  while (out.length < count && pool.length > 0) out.push(pool.splice(Math.floor(rand() * pool.length), 1)[0]!);
  return out.sort((a, b) => a - b);
}

const ALL_ATTRIBUTES = [1, 2, 3, 4, 5, 6, 7, 8];
/** The narrower attributes (1/8, 1/10, 1/10): what single-attribute (AnyOf) policies select. */
const NARROW = [6, 7, 8];
/** Attributes without the complementary halves, whose intersection would be (nearly) empty. */
const CROSSABLE = [2, 3, 4, 5, 6, 7, 8];

function attrRoles(kind: EntityKind, ks: readonly number[]): string[] {
  return ks.map((k) => `#${attributeName(kind, k)}`);
}

const worstRef = (kind: EntityKind) => `@${WORST_NAMES[kind]}`;

/**
 * A policy's two role lists: AnyOf over one narrow attribute each side, or (every third policy) AllOf over
 * two attributes of the identity/service side and two or three of the other, each plus the worst-case refs.
 */
function roleLists(rand: () => number, p: number, left: EntityKind, right: EntityKind) {
  const allOf = p % 3 === 0;
  const semantic: Semantic = allOf ? 'AllOf' : 'AnyOf';
  const leftKs = allOf ? pickAttributes(rand, CROSSABLE, 2) : pickAttributes(rand, NARROW, 1);
  const rightKs = allOf ? pickAttributes(rand, CROSSABLE, 2 + (p % 2)) : pickAttributes(rand, NARROW, 1);
  return {
    semantic,
    left: [...attrRoles(left, leftKs), worstRef(left)],
    right: [...attrRoles(right, rightKs), worstRef(right)],
  };
}

/** Generates the records of a size; pure function of (size, seed). */
export function generateDataset(size: SizeName, seed: number = DEFAULT_SEED): GeneratedDataset {
  const spec = SIZES[size];
  if (!spec) throw new Error(`unknown dataset size ${String(size)} (one of ${SIZE_NAMES.join(', ')})`);
  const rand = mulberry32(seed);
  const identities = entities('identity', spec.identities, rand, (i) => `identity-${pad(i, widthFor(spec.identities))}`);
  const services = entities('service', spec.services, rand, (i) => `service-${pad(i, widthFor(spec.services))}`);
  const edgeRouters = entities('edgeRouter', spec.edgeRouters, rand, (i) => `router-${pad(i, widthFor(spec.edgeRouters))}`);

  const halves = (kind: EntityKind) => attrRoles(kind, [1, 2]);
  const servicePolicies: ServicePolicyRecord[] = [];
  const spName = (p: number) => `service-policy-${pad(p, 4)}`;
  for (let p = 1; p <= spec.servicePolicies; p++) {
    if (p === 1) {
      // The one `#all` Dial policy: every identity may dial a tenth of the services (and the worst one).
      servicePolicies.push({ name: spName(p), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all'], serviceRoles: ['#service-role-8', worstRef('service')] });
    } else if (p === 2) {
      // Only the worst-case identity: both complementary halves, i.e. every service.
      servicePolicies.push({ name: spName(p), type: 'Dial', semantic: 'AnyOf', identityRoles: [worstRef('identity')], serviceRoles: [...halves('service'), worstRef('service')] });
    } else {
      const r = roleLists(rand, p, 'identity', 'service');
      servicePolicies.push({ name: spName(p), type: p % 4 === 0 ? 'Bind' : 'Dial', semantic: r.semantic, identityRoles: r.left, serviceRoles: r.right });
    }
  }

  const edgeRouterPolicies: EdgeRouterPolicyRecord[] = [];
  const erpName = (p: number) => `edge-router-policy-${pad(p, 4)}`;
  for (let p = 1; p <= spec.edgeRouterPolicies; p++) {
    if (p === 1) {
      edgeRouterPolicies.push({ name: erpName(p), semantic: 'AnyOf', identityRoles: [worstRef('identity')], edgeRouterRoles: [...halves('edgeRouter'), worstRef('edgeRouter')] });
    } else {
      const r = roleLists(rand, p, 'identity', 'edgeRouter');
      edgeRouterPolicies.push({ name: erpName(p), semantic: r.semantic, identityRoles: r.left, edgeRouterRoles: r.right });
    }
  }

  const serviceEdgeRouterPolicies: ServiceEdgeRouterPolicyRecord[] = [];
  const serpName = (p: number) => `service-edge-router-policy-${pad(p, 4)}`;
  for (let p = 1; p <= spec.serviceEdgeRouterPolicies; p++) {
    if (p === 1) {
      // Every service may use the routers of one narrow attribute (and the worst-case router).
      serviceEdgeRouterPolicies.push({
        name: serpName(p),
        semantic: 'AnyOf',
        serviceRoles: [...halves('service'), worstRef('service')],
        edgeRouterRoles: ['#router-role-8', worstRef('edgeRouter')],
      });
    } else {
      const r = roleLists(rand, p, 'service', 'edgeRouter');
      serviceEdgeRouterPolicies.push({ name: serpName(p), semantic: r.semantic, serviceRoles: r.left, edgeRouterRoles: r.right });
    }
  }

  const dataset: GeneratedDataset = {
    size,
    seed,
    identities,
    services,
    edgeRouters,
    servicePolicies,
    edgeRouterPolicies,
    serviceEdgeRouterPolicies,
    allDialPolicyName: spName(1),
    typicalIdentityName: '',
    typicalServiceCount: 0,
    worstServiceCount: 0,
  };
  const model = accessModel(dataset);
  const worstIndex = identities.length - 1;
  dataset.worstServiceCount = model.visibleServices(worstIndex).size;
  // Typical: the median number of visible services over a sample of ordinary identities (ties: lowest index).
  const sample = Array.from({ length: Math.min(101, identities.length - 1) }, (_, i) => ({ i, count: model.visibleServices(i).size }));
  sample.sort((a, b) => a.count - b.count || a.i - b.i);
  const typical = sample[Math.floor(sample.length / 2)]!;
  dataset.typicalIdentityName = identities[typical.i]!.name;
  dataset.typicalServiceCount = typical.count;
  return dataset;
}

/** Upstream's role matching: `#all` everything, `@` always, then AllOf/AnyOf over the `#` attributes. */
export function roleMatches(roles: readonly string[], semantic: Semantic, entity: EntityRecord): boolean {
  if (roles.includes('#all')) return true;
  if (roles.includes(`@${entity.name}`)) return true;
  const attrs = roles.filter((r) => r.startsWith('#')).map((r) => r.slice(1));
  if (attrs.length === 0) return false;
  return semantic === 'AllOf' ? attrs.every((a) => entity.roleAttributes.includes(a)) : attrs.some((a) => entity.roleAttributes.includes(a));
}

/** An independent, naive model of the service policies: which services (indexes) an identity may use. */
export function accessModel(dataset: GeneratedDataset) {
  const serviceMembers = dataset.servicePolicies.map((p) => {
    const members: number[] = [];
    dataset.services.forEach((s, i) => {
      if (roleMatches(p.serviceRoles, p.semantic, s)) members.push(i);
    });
    return members;
  });
  return {
    visibleServices(identityIndex: number): Set<number> {
      const identity = dataset.identities[identityIndex]!;
      const out = new Set<number>();
      dataset.servicePolicies.forEach((p, j) => {
        if (roleMatches(p.identityRoles, p.semantic, identity)) for (const s of serviceMembers[j]!) out.add(s);
      });
      return out;
    },
  };
}

// ---- loader ------------------------------------------------------------------------------------------------

export const SIZED_USER_PASSWORD = 'bench-user-password-1';
const MARKER = 'dataset.json';
/** Progress is logged every this many records of a long list. */
const PROGRESS_EVERY = 20_000;
/** Identities that get a certificate besides the typical and the worst-case one. */
const EXTRA_CERT_USERS = 2;

export interface DatasetUser {
  role: 'typical' | 'worst';
  identityId: string;
  username: string;
  password: string;
}

export interface DatasetCertUser {
  role: 'typical' | 'worst';
  identityId: string;
  /** The issued chain as enrollment returns it: the leaf followed by the signing intermediate. */
  certPem: string;
  /** PKCS#8 PEM of the private key. */
  keyPem: string;
}

/** The content of `dataset.json`. */
export interface SizedDatasetMarker {
  size: SizeName;
  seed: number;
  counts: SizeSpec;
  /** Wall time of creating every record (entities, policies, users), without the controller's start. */
  loadMs: number;
  /** The PostgreSQL server and database it was loaded into (no credentials); absent: SQLite in the data dir. */
  database?: string;
  phasesMs: Record<string, number>;
  adminUser: string;
  adminPassword: string;
  users: DatasetUser[];
  certUsers: DatasetCertUser[];
  probes: {
    allDialPolicyId: string;
    worstIdentityId: string;
    typicalIdentityId: string;
    typicalServiceCount: number;
    worstServiceCount: number;
  };
}

export interface SizedDataset extends SizedDatasetMarker {
  dataDir: string;
  reused: boolean;
}

export interface EnsureOptions {
  seed?: number;
  dataDir?: string;
  /** Regenerate even when the marker matches. */
  force?: boolean;
  log?: (line: string) => void;
  /** Load into this (empty) PostgreSQL database instead of SQLite in the data dir. */
  databaseUrl?: string;
}

export function defaultDataDir(size: SizeName): string {
  return join('bench', '.data', size);
}

function readMarker(dataDir: string): SizedDatasetMarker | undefined {
  try {
    return JSON.parse(readFileSync(join(dataDir, MARKER), 'utf8')) as SizedDatasetMarker;
  } catch {
    return undefined;
  }
}

/** A fresh EC P-256 key and a CSR for it (subject as the Go SDK sends). */
export async function keyAndCsr(commonName: string): Promise<{ keyPem: string; csrPem: string }> {
  const { x509 } = await import('../../src/pki/x509-library.ts');
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/(.{64})(?!$)/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `C=US, O=NetFoundry, CN=${commonName}`,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
  });
  return { keyPem, csrPem: csr.toString('pem') };
}

/** Makes sure the data directory holds the dataset of this size and seed; (re)generates it otherwise. */
export async function ensureSizedDataset(size: SizeName, options: EnsureOptions = {}): Promise<SizedDataset> {
  const seed = options.seed ?? DEFAULT_SEED;
  const dataDir = options.dataDir ?? defaultDataDir(size);
  const log = options.log ?? console.log;
  const { databaseTarget, markedStoreExists } = await import('./identities.ts');
  const database = databaseTarget(options.databaseUrl);
  const marker = readMarker(dataDir);
  if (!options.force && marker && marker.size === size && marker.seed === seed && markedStoreExists(dataDir, marker.database, options.databaseUrl)) {
    log(`dataset ${size}: reusing ${dataDir} (originally loaded in ${(marker.loadMs / 1000).toFixed(1)} s)`);
    return { ...marker, dataDir, reused: true };
  }
  if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });

  const generated = generateDataset(size, seed);
  const spec = SIZES[size];
  log(
    `dataset ${size}: ${spec.identities} identities, ${spec.services} services, ${spec.edgeRouters} edge routers, ` +
      `${spec.servicePolicies}/${spec.edgeRouterPolicies}/${spec.serviceEdgeRouterPolicies} policies (seed ${seed}) into ${dataDir}` +
      (database ? ` and ${database}` : ''),
  );

  const [{ startController }, { loadConfig }, { BENCH_ADMIN_PASSWORD }, { findEnrollmentById }] = await Promise.all([
    import('../../src/controller.ts'),
    import('../../src/config.ts'),
    import('./identities.ts'),
    import('../../src/enrollment/enrollment-store.ts'),
  ]);
  const controller = await startController(
    loadConfig(
      ['--data-dir', dataDir, ...(options.databaseUrl ? ['--database-url', options.databaseUrl] : []), '--address', '127.0.0.1', '--port', '0',
        '--admin-password', BENCH_ADMIN_PASSWORD, '--log-level', 'silent'],
      {},
    ),
  );
  try {
    const { store, services: s } = controller;
    if (!controller.admin.created) throw new Error(`dataset ${size}: the store already holds records (give an empty database)`);
    // Bulk load on SQLite: no fsync per commit (the files are synced when the controller closes the database).
    if (store.kind === 'sqlite') (store as SqliteStore).db.pragma('synchronous = OFF');
    const ids = new Map<string, string>();
    const resolve = (roles: readonly string[]) => roles.map((r) => (r.startsWith('@') ? `@${ids.get(r.slice(1)) ?? r.slice(1)}` : r));
    const phasesMs: Record<string, number> = {};
    const started = performance.now();
    let phaseStart = started;
    const phase = (name: string, detail: string) => {
      const now = performance.now();
      phasesMs[name] = Math.round(now - phaseStart);
      log(`dataset ${size}:   ${detail} in ${((now - phaseStart) / 1000).toFixed(1)} s`);
      phaseStart = now;
    };
    /** Creates records one after the other, each in its own transaction (a write cannot nest in another). */
    const createAll = async <T>(records: readonly T[], create: (record: T) => Promise<string>, names: (record: T) => string) => {
      let done = 0;
      for (const record of records) {
        ids.set(names(record), await create(record));
        done += 1;
        if (done % PROGRESS_EVERY === 0) log(`dataset ${size}:     ${done}/${records.length}`);
      }
    };
    const identityBody = (r: EntityRecord) => ({ name: r.name, type: 'User', isAdmin: false, roleAttributes: r.roleAttributes });
    const serviceBody = (r: EntityRecord) => ({ name: r.name, encryptionRequired: true, roleAttributes: r.roleAttributes });
    const routerBody = (r: EntityRecord) => ({ name: r.name, isTunnelerEnabled: false, roleAttributes: r.roleAttributes });
    const worstOf = <T>(list: readonly T[]) => list[list.length - 1]!;
    const allButWorst = <T>(list: readonly T[]) => list.slice(0, -1);

    // The worst-case entities first: the policies name them.
    const worstIdentity = worstOf(generated.identities);
    const worstService = worstOf(generated.services);
    const worstRouter = worstOf(generated.edgeRouters);
    ids.set(worstIdentity.name, await s.identities.create(identityBody(worstIdentity)));
    ids.set(worstService.name, await s.services.create(serviceBody(worstService)));
    ids.set(worstRouter.name, await s.edgeRouters.create(routerBody(worstRouter)));
    await createAll(allButWorst(generated.services), (r) => s.services.create(serviceBody(r)), (r) => r.name);
    phase('services', `${generated.services.length} services`);
    // Edge router creates are asynchronous (each signs its enrollment JWT first), one transaction each.
    for (const r of allButWorst(generated.edgeRouters)) ids.set(r.name, await s.edgeRouters.create(routerBody(r)));
    phase('edgeRouters', `${generated.edgeRouters.length} edge routers`);
    await createAll(allButWorst(generated.identities), (r) => s.identities.create(identityBody(r)), (r) => r.name);
    phase('identities', `${generated.identities.length} identities`);
    // Policies last: each evaluates its members through the attribute index and marks the identities it
    // affects once, where policies first would re-evaluate every entity create against every policy.
    for (const p of generated.servicePolicies) {
      ids.set(p.name, await s.servicePolicies.create({ ...p, identityRoles: resolve(p.identityRoles), serviceRoles: resolve(p.serviceRoles), postureCheckRoles: [] }));
    }
    for (const p of generated.edgeRouterPolicies) {
      ids.set(p.name, await s.edgeRouterPolicies.create({ ...p, identityRoles: resolve(p.identityRoles), edgeRouterRoles: resolve(p.edgeRouterRoles) }));
    }
    for (const p of generated.serviceEdgeRouterPolicies) {
      ids.set(p.name, await s.serviceEdgeRouterPolicies.create({ ...p, serviceRoles: resolve(p.serviceRoles), edgeRouterRoles: resolve(p.edgeRouterRoles) }));
    }
    phase('policies', `${generated.servicePolicies.length + generated.edgeRouterPolicies.length + generated.serviceEdgeRouterPolicies.length} policies`);

    const typicalId = ids.get(generated.typicalIdentityName)!;
    const worstId = ids.get(worstIdentity.name)!;
    const users: DatasetUser[] = [];
    for (const [role, identityId, username] of [
      ['typical', typicalId, 'bench-typical'],
      ['worst', worstId, 'bench-worst'],
    ] as const) {
      await s.authenticators.create({ method: 'updb', identityId, username, password: SIZED_USER_PASSWORD });
      users.push({ role, identityId, username, password: SIZED_USER_PASSWORD });
    }
    // Certificates the way an SDK gets them: an ott enrollment, then the ott enroll method with a CSR.
    const ott = s.enrollMethods.find((m) => m.name === 'ott');
    if (!ott) throw new Error('the controller has no ott enroll method');
    const extra = generated.identities
      .filter((r) => r.name !== generated.typicalIdentityName && r !== worstIdentity)
      .slice(0, EXTRA_CERT_USERS)
      .map((r) => ['typical', ids.get(r.name)!] as const);
    const certUsers: DatasetCertUser[] = [];
    for (const [role, identityId] of [['typical', typicalId] as const, ['worst', worstId] as const, ...extra]) {
      const enrollmentId = await s.enrollments.create({ method: 'ott', identityId, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
      const enrollment = await findEnrollmentById(store, enrollmentId);
      if (!enrollment) throw new Error(`enrollment ${enrollmentId} vanished`);
      const { keyPem, csrPem } = await keyAndCsr(identityId);
      const issued = await ott.enroll({ method: 'ott', enrollment, body: { clientCsr: csrPem }, peerCertificates: [], headers: {} });
      certUsers.push({ role, identityId, certPem: String(issued.cert), keyPem });
    }
    phase('users', `${users.length} password and ${certUsers.length} certificate users`);
    const loadMs = Math.round(performance.now() - started);

    // Cross-checks: the stored counts, and the access index against the generator's own model.
    const count = async (sql: string) => Number(await store.value(sql));
    const stored: SizeSpec = {
      services: await count('SELECT count(*) AS n FROM services'),
      identities: await count("SELECT count(*) AS n FROM identities WHERE is_default_admin = 0 AND type_id <> 'Router'"),
      edgeRouters: await count('SELECT count(*) AS n FROM routers WHERE is_edge = 1'),
      servicePolicies: await count('SELECT count(*) AS n FROM service_policies'),
      edgeRouterPolicies: await count('SELECT count(*) AS n FROM edge_router_policies WHERE is_system = 0'),
      serviceEdgeRouterPolicies: await count('SELECT count(*) AS n FROM service_edge_router_policies'),
    };
    for (const key of Object.keys(spec) as Array<keyof SizeSpec>) {
      if (stored[key] !== spec[key]) throw new Error(`dataset ${size}: expected ${spec[key]} ${key}, the store holds ${stored[key]}`);
    }
    const seen = (identityId: string) => s.access.index.servicesOfIdentity(identityId).size;
    if (seen(typicalId) !== generated.typicalServiceCount || seen(worstId) !== generated.worstServiceCount) {
      throw new Error(
        `dataset ${size}: access index disagrees with the generator (typical ${seen(typicalId)} vs ${generated.typicalServiceCount}, ` +
          `worst ${seen(worstId)} vs ${generated.worstServiceCount})`,
      );
    }

    const result: SizedDatasetMarker = {
      size,
      seed,
      counts: { ...spec },
      loadMs,
      ...(database ? { database } : {}),
      phasesMs,
      adminUser: controller.admin.username,
      adminPassword: BENCH_ADMIN_PASSWORD,
      users,
      certUsers,
      probes: {
        allDialPolicyId: ids.get(generated.allDialPolicyName)!,
        worstIdentityId: worstId,
        typicalIdentityId: typicalId,
        typicalServiceCount: generated.typicalServiceCount,
        worstServiceCount: generated.worstServiceCount,
      },
    };
    await controller.stop();
    writeFileSync(join(dataDir, MARKER), JSON.stringify(result, null, 2) + '\n');
    log(`dataset ${size}: loaded in ${(loadMs / 1000).toFixed(1)} s (typical identity sees ${generated.typicalServiceCount}, worst ${generated.worstServiceCount} services)`);
    return { ...result, dataDir, reused: false };
  } finally {
    await controller.stop();
  }
}
