/**
 * Access suite: the client API's service list (pages of 25 and 500), service-updates and session
 * creation as an ordinary identity, each against a bare node:https server replaying the same bytes; and
 * the wall time of one service policy change that affects every identity. Run through `npm run bench`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureAccessDataset, BENCH_USER_PASSWORD } from './datasets/access.ts';
import { BENCH_ADMIN_PASSWORD } from './datasets/identities.ts';
import { comparisonTable, apiClient, fetchOnce, fmt, killChildren, measure, ms, spawnReady, stopChild, type Row } from './lib.ts';

export interface AccessSuiteOptions {
  identities: number;
  services: number;
  duration: number;
  connections: number;
}

const WARMUP_S = 2;
const POLICY_CHANGES = 6;

interface Scenario {
  id: string;
  label: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  status: number;
}

export async function runAccessSuite(opts: AccessSuiteOptions): Promise<void> {
  const { identities, services, duration, connections } = opts;
  const dataDir = join('bench', '.data', `access-${identities}-${services}`);
  const dataset = await ensureAccessDataset(dataDir, identities, services);
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-bench-'));
  try {
    console.log('controller: starting (child process) ...');
    const controller = await spawnReady<{ port: number; caBundlePem: string; startMs: number; rssMb: number }>('bench/serve.ts', [dataDir, '0']);
    const { port, caBundlePem: ca, startMs, rssMb } = controller.info;
    console.log(`controller: listening on port ${port}; start (migrations, PKI, index load) ${startMs.toFixed(0)} ms, RSS ${rssMb.toFixed(0)} MB`);

    const api = apiClient(port, ca, 2);
    const user = await api.must('POST', '/edge/client/v1/authenticate?method=password', { username: dataset.users[0], password: BENCH_USER_PASSWORD }, 200);
    const userToken = user.data.token as string;
    const admin = await api.must('POST', '/edge/management/v1/authenticate?method=password', { username: 'admin', password: BENCH_ADMIN_PASSWORD }, 200);
    const adminToken = admin.data.token as string;

    api.setToken(userToken);
    const visible = await api.must('GET', '/edge/client/v1/services?limit=500', undefined, 200);
    const total = visible.meta.pagination.totalCount as number;
    if (total < 26) throw new Error(`bench user sees only ${total} services; the dataset should give it more`);
    const routable = await findRoutableService(api, visible.data as Array<{ id: string; permissions: string[] }>);
    console.log(`bench user sees ${total} services; session target ${routable}`);

    const scenarios: Scenario[] = [
      { id: 'S1', label: 'client GET /services, page of 25', method: 'GET', path: '/edge/client/v1/services?limit=25', status: 200 },
      { id: 'S2', label: 'client GET /services, page of 500', method: 'GET', path: '/edge/client/v1/services?limit=500', status: 200 },
      { id: 'S3', label: 'client GET /current-api-session/service-updates', method: 'GET', path: '/edge/client/v1/current-api-session/service-updates', status: 200 },
      {
        id: 'S4',
        label: 'client POST /sessions (Dial; a repeat request reuses the session)',
        method: 'POST',
        path: '/edge/client/v1/sessions',
        body: JSON.stringify({ serviceId: routable, type: 'Dial' }),
        status: 201,
      },
    ];
    const headers = { 'zt-session': userToken, accept: 'application/json', 'content-type': 'application/json' };

    const canned: Record<string, { status: number; contentType: string; bodyBase64: string }> = {};
    for (const s of scenarios) {
      const r = await fetchOnce(port, ca, s.method, s.path, headers, s.body);
      if (r.status !== s.status) throw new Error(`${s.id}: expected ${s.status}, got ${r.status}: ${r.body.toString('utf8').slice(0, 400)}`);
      console.log(`check ${s.id}: ${r.status}, ${r.body.length} bytes`);
      canned[s.path] = { status: r.status, contentType: r.contentType, bodyBase64: r.body.toString('base64') };
    }
    const responsesFile = join(tmp, 'responses.json');
    writeFileSync(responsesFile, JSON.stringify(canned));
    const bare = await spawnReady<{ port: number }>('bench/bare.ts', [dataDir, '0', responsesFile]);

    const rows: Row[] = [];
    for (const s of scenarios) {
      for (const [server, p] of [
        ['Portcullis', port],
        ['bare node:https', bare.info.port],
      ] as const) {
        const m = { connections, method: s.method, body: s.body };
        await measure(p, s.path, headers, { ...m, seconds: WARMUP_S });
        console.log(`measuring ${s.id} against ${server} for ${duration} s ...`);
        const r = await measure(p, s.path, headers, { ...m, seconds: duration });
        const row: Row = { scenario: s.id, server, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts, total: r.requests.total };
        if (row.non2xx || row.errors) console.log(`  !! ${server} ${s.id}: ${JSON.stringify(r.statusCodeStats)} errors=${r.errors} timeouts=${r.timeouts}`);
        rows.push(row);
      }
    }
    await stopChild(bare.child);

    // One policy change that affects every identity: the probe policy's identity roles become #all and back.
    api.setToken(adminToken);
    const path = `/edge/management/v1/service-policies/${dataset.probePolicyId}`;
    const original = (await api.must('GET', path, undefined, 200)).data.identityRoles as string[];
    api.setToken(userToken);
    const before = (await api.must('GET', '/edge/client/v1/current-api-session/service-updates', undefined, 200)).data.lastChangeAt as string;
    api.setToken(adminToken);
    const changeMs: number[] = [];
    for (let i = 0; i < POLICY_CHANGES; i++) {
      const roles = i % 2 === 0 ? ['#all'] : original;
      const t0 = performance.now();
      await api.must('PATCH', path, { identityRoles: roles }, 200);
      changeMs.push(performance.now() - t0);
    }
    api.setToken(userToken);
    const after = (await api.must('GET', '/edge/client/v1/current-api-session/service-updates', undefined, 200)).data.lastChangeAt as string;
    if (!(after > before)) throw new Error(`service-updates did not advance for the bench user (${before} → ${after})`);
    api.close();
    await stopChild(controller.child);

    const sorted = [...changeMs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const cpu = cpus();
    const lines = [
      '# Access benchmark',
      '',
      `- Date: ${new Date().toISOString().slice(0, 10)}`,
      `- Node ${process.version}, ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores (load generator and server share them)`,
      `- Dataset: ${fmt(identities)} identities × ${fmt(services)} services × ${dataset.policies} policies (seed 0x${dataset.seed.toString(16)}), loaded through the management API in ${(dataset.loadMs / 1000).toFixed(1)} s`,
      `- Controller start on this dataset (migrations, PKI, access index load): ${fmt(startMs)} ms; RSS after start ${fmt(rssMb)} MB`,
      `- The bench user (an ordinary identity) sees ${fmt(total)} services`,
      `- autocannon: ${connections} connections, ${duration} s per row (after a ${WARMUP_S} s discarded warm-up), HTTPS over 127.0.0.1, keep-alive`,
      '',
      ...scenarios.map((s) => `- ${s.id}: \`${s.method} ${s.path}\` (${s.label})`),
      '',
      ...comparisonTable(rows),
      '',
      `Policy change affecting all ${fmt(identities)} identities (PATCH identityRoles to \`#all\` and back, ${POLICY_CHANGES} requests, each ` +
        `re-evaluating the policy and marking every affected identity's service-updates time): median ${fmt(median, 1)} ms, ` +
        `min ${fmt(sorted[0]!, 1)} ms, max ${fmt(sorted[sorted.length - 1]!, 1)} ms (wall time of the HTTP request).`,
      '',
    ];
    const report = lines.join('\n');
    console.log('\n' + report);
    mkdirSync(join('bench', 'results'), { recursive: true });
    writeFileSync(join('bench', 'results', 'access.md'), report);
    console.log('written to bench/results/access.md');
  } finally {
    killChildren();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A dialable service for which the bench user also has a shared edge router (else sessions fail). */
async function findRoutableService(api: ReturnType<typeof apiClient>, list: Array<{ id: string; permissions: string[] }>): Promise<string> {
  for (const s of list) {
    if (!s.permissions.includes('Dial')) continue;
    const r = await api.call('POST', '/edge/client/v1/sessions', { serviceId: s.id, type: 'Dial' });
    if (r.status === 201) return s.id;
  }
  throw new Error('no service with a usable edge router for the bench user');
}
