/**
 * Deterministic access dataset: identities, services, edge routers and 200 policies (service policies,
 * edge router policies, service edge router policies), generated from a seeded PRNG and loaded through
 * the public management API of a running controller — the path an operator's tooling takes, so the load
 * time includes validation, the access index and the change marks.
 *
 * Shape (defaults: 10,000 identities, 1,000 services):
 * - identity i: one of 50 teams (`team-NN`) and one of 5 regions (`region-N`);
 * - service j: one of 20 apps (`app-NN`) and one of 5 tiers (`tier-N`);
 * - 20 edge routers, each in one of 4 zones (`zone-N`);
 * - 180 service policies (150 Dial, 30 Bind): AnyOf over 2 teams → AnyOf over 2 apps, every tenth AllOf
 *   (a team and a region → an app and a tier);
 * - 10 edge router policies (2 regions → 2 zones), 10 service edge router policies (a tier → 2 zones);
 * - BENCH_USERS identities also get a password authenticator, for client API scenarios.
 *
 * Run alone: node --import tsx bench/datasets/access.ts [--identities N] [--services M]
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { mulberry32 } from '../../test/support/prng.ts';
import { BENCH_ADMIN_PASSWORD } from './identities.ts';
import { apiClient, pool, spawnReady, stopChild } from '../lib.ts';

export const ACCESS_SEED = 0xacce55;
export const BENCH_USER_PASSWORD = 'bench-user-password-1';
export const BENCH_USERS = 4;
const MARKER = 'dataset.json';
const TEAMS = 50;
const REGIONS = 5;
const APPS = 20;
const TIERS = 5;
const ZONES = 4;
const ROUTERS = 20;

export interface AccessDataset {
  dataDir: string;
  identities: number;
  services: number;
  policies: number;
  seed: number;
  loadMs: number;
  reused: boolean;
  /** Usernames of the identities that have a password (identity-000001...). */
  users: string[];
  /** One service policy id whose identity roles the policy-change scenario rewrites. */
  probePolicyId: string;
}

const pad = (n: number, w: number) => String(n).padStart(w, '0');
const team = (n: number) => `team-${pad(n, 2)}`;
const app = (n: number) => `app-${pad(n, 2)}`;

export async function ensureAccessDataset(dataDir: string, identities: number, services: number, log = console.log): Promise<AccessDataset> {
  const markerFile = join(dataDir, MARKER);
  if (existsSync(markerFile)) {
    const marker = JSON.parse(readFileSync(markerFile, 'utf8')) as AccessDataset;
    if (marker.identities === identities && marker.services === services && marker.seed === ACCESS_SEED) {
      log(`dataset: reusing ${dataDir} (${identities} identities, ${services} services, ${marker.policies} policies)`);
      return { ...marker, dataDir, reused: true };
    }
  }
  if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  log(`dataset: generating ${identities} identities, ${services} services, 200 policies into ${dataDir} through the API ...`);

  const server = await spawnReady<{ port: number; caBundlePem: string }>('bench/serve.ts', [dataDir, '0']);
  const api = apiClient(server.info.port, server.info.caBundlePem);
  try {
    const login = await api.must('POST', '/edge/management/v1/authenticate?method=password', { username: 'admin', password: BENCH_ADMIN_PASSWORD }, 200);
    api.setToken(login.data.token);
    const m = (path: string) => `/edge/management/v1${path}`;
    const rand = mulberry32(ACCESS_SEED);
    const pick = (n: number) => Math.floor(rand() * n);
    const twoOf = (n: number, name: (i: number) => string) => {
      const a = pick(n);
      const b = (a + 1 + pick(n - 1)) % n;
      return [`#${name(a)}`, `#${name(b)}`];
    };
    const started = performance.now();

    const identityBodies = Array.from({ length: identities }, (_, i) => ({
      name: `identity-${pad(i + 1, 6)}`,
      type: 'User',
      isAdmin: false,
      roleAttributes: [team(pick(TEAMS)), `region-${pick(REGIONS)}`],
    }));
    const identityIds: string[] = new Array(identities);
    await pool(identityBodies, 8, async (body, i) => {
      identityIds[i] = (await api.must('POST', m('/identities'), body, 201)).data.id;
    });
    log(`dataset: ${identities} identities`);

    const serviceBodies = Array.from({ length: services }, (_, j) => ({
      name: `service-${pad(j + 1, 5)}`,
      encryptionRequired: true,
      roleAttributes: [app(pick(APPS)), `tier-${pick(TIERS)}`],
    }));
    await pool(serviceBodies, 8, async (body) => {
      await api.must('POST', m('/services'), body, 201);
    });
    log(`dataset: ${services} services`);

    const routerBodies = Array.from({ length: ROUTERS }, (_, k) => ({ name: `router-${pad(k + 1, 2)}`, roleAttributes: [`zone-${k % ZONES}`] }));
    await pool(routerBodies, 4, async (body) => {
      await api.must('POST', m('/edge-routers'), body, 201);
    });

    const policyIds: string[] = [];
    for (let p = 0; p < 180; p++) {
      const allOf = p % 10 === 9;
      const body = allOf
        ? {
            name: `sp-${pad(p, 3)}`,
            type: p < 150 ? 'Dial' : 'Bind',
            semantic: 'AllOf',
            identityRoles: [`#${team(pick(TEAMS))}`, `#region-${pick(REGIONS)}`],
            serviceRoles: [`#${app(pick(APPS))}`, `#tier-${pick(TIERS)}`],
          }
        : { name: `sp-${pad(p, 3)}`, type: p < 150 ? 'Dial' : 'Bind', semantic: 'AnyOf', identityRoles: twoOf(TEAMS, team), serviceRoles: twoOf(APPS, app) };
      policyIds.push((await api.must('POST', m('/service-policies'), body, 201)).data.id);
    }
    for (let p = 0; p < 10; p++) {
      await api.must('POST', m('/edge-router-policies'), {
        name: `erp-${pad(p, 2)}`,
        semantic: 'AnyOf',
        identityRoles: twoOf(REGIONS, (i) => `region-${i}`),
        edgeRouterRoles: twoOf(ZONES, (i) => `zone-${i}`),
      }, 201);
      await api.must('POST', m('/service-edge-router-policies'), {
        name: `serp-${pad(p, 2)}`,
        semantic: 'AnyOf',
        serviceRoles: [`#tier-${p % TIERS}`],
        edgeRouterRoles: twoOf(ZONES, (i) => `zone-${i}`),
      }, 201);
    }
    log('dataset: 200 policies');

    const users: string[] = [];
    for (let u = 0; u < BENCH_USERS; u++) {
      const username = `bench-user-${u + 1}`;
      await api.must('POST', m('/authenticators'), { method: 'updb', identityId: identityIds[u], username, password: BENCH_USER_PASSWORD }, 201);
      users.push(username);
    }
    const loadMs = performance.now() - started;
    const dataset: AccessDataset = {
      dataDir,
      identities,
      services,
      policies: 200,
      seed: ACCESS_SEED,
      loadMs,
      reused: false,
      users,
      probePolicyId: policyIds[0]!,
    };
    writeFileSync(markerFile, JSON.stringify(dataset, null, 2));
    log(`dataset: loaded in ${(loadMs / 1000).toFixed(1)} s`);
    return dataset;
  } finally {
    api.close();
    await stopChild(server.child);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const arg = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
  const identities = arg('--identities', 10_000);
  const services = arg('--services', 1_000);
  await ensureAccessDataset(join('bench', '.data', `access-${identities}-${services}`), identities, services);
}
