/**
 * Identity read suite: a filtered identity page and current-identity, Portcullis vs. a bare node:https
 * server answering the same bytes. Run through `npm run bench` (see bench/README.md).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_ADMIN_PASSWORD, ensureIdentityDataset } from './datasets/identities.ts';
import { comparisonTable, fetchOnce, fmt, HOST, killChildren, measure, ms, spawnReady, stopChild, type Row } from './lib.ts';

export interface SuiteOptions {
  identities: number;
  duration: number;
  connections: number;
}

const WARMUP_S = 2;

const SCENARIOS = [
  {
    id: 'A',
    label: 'list identities: filter roleAttributes + name contains, sort by name desc, limit 25',
    path: '/edge/management/v1/identities?filter=anyOf(roleAttributes)%3D%22eng%22%20and%20name%20contains%20%22identity-09%22%20sort%20by%20name%20desc&limit=25',
  },
  { id: 'B', label: 'current identity (client API)', path: '/edge/client/v1/current-identity' },
] as const;

// ---- main --------------------------------------------------------------------------------------------------
export async function runIdentitySuite({ identities, duration, connections }: SuiteOptions): Promise<void> {
  const dataDir = join('bench', '.data', `identities-${identities % 1000 === 0 ? `${identities / 1000}k` : identities}`);
  const dataset = await ensureIdentityDataset(dataDir, identities);
  const tmp = mkdtempSync(join(tmpdir(), 'portcullis-bench-'));
  try {
    console.log('controller: starting (child process) ...');
    const controller = await spawnReady<{ port: number; caBundlePem: string }>('bench/serve.ts', [dataDir, '0']);
    const { port, caBundlePem: ca } = controller.info;
    console.log(`controller: listening on https://${HOST}:${port}`);

    const login = await fetchOnce(port, ca, 'POST', '/edge/management/v1/authenticate?method=password', { 'content-type': 'application/json' }, JSON.stringify({ username: 'admin', password: BENCH_ADMIN_PASSWORD }));
    if (login.status !== 200) throw new Error(`login failed: HTTP ${login.status} ${login.body.toString('utf8').slice(0, 500)}`);
    const token = (JSON.parse(login.body.toString('utf8')) as { data: { token: string } }).data.token;
    const headers = { 'zt-session': token, accept: 'application/json' };

    // Capture each response once: sanity checks, and the bytes the bare server will replay.
    const canned: Record<string, { status: number; contentType: string; bodyBase64: string }> = {};
    for (const s of SCENARIOS) {
      const t0 = performance.now();
      const r = await fetchOnce(port, ca, 'GET', s.path, headers);
      const ms = performance.now() - t0;
      if (r.status !== 200) throw new Error(`${s.id}: expected 200, got ${r.status}: ${r.body.toString('utf8').slice(0, 500)}`);
      const doc = JSON.parse(r.body.toString('utf8')) as { data: unknown; meta?: { pagination?: { totalCount?: number } } };
      if (s.id === 'A') {
        const total = doc.meta?.pagination?.totalCount ?? 0;
        const count = Array.isArray(doc.data) ? doc.data.length : 0;
        if (total <= 0) throw new Error(`A: totalCount is ${total}; the filter matches identity-09xxxx, which needs --identities >= 90000`);
        console.log(`check A: 200, totalCount=${total}, page=${count} items, ${r.body.length} bytes, first request ${ms.toFixed(0)} ms`);
      } else {
        console.log(`check ${s.id}: 200, ${r.body.length} bytes, first request ${ms.toFixed(0)} ms`);
      }
      canned[s.path] = { status: r.status, contentType: r.contentType, bodyBase64: r.body.toString('base64') };
    }
    const responsesFile = join(tmp, 'responses.json');
    writeFileSync(responsesFile, JSON.stringify(canned));

    console.log('bare server: starting (child process) ...');
    const bare = await spawnReady<{ port: number }>('bench/bare.ts', [dataDir, '0', responsesFile]);
    const barePort = bare.info.port;
    for (const s of SCENARIOS) {
      const r = await fetchOnce(barePort, ca, 'GET', s.path, headers);
      if (r.status !== 200 || r.body.toString('base64') !== canned[s.path]!.bodyBase64) throw new Error(`bare server does not replay ${s.id} identically`);
    }

    const rows: Row[] = [];
    for (const s of SCENARIOS) {
      for (const [server, p] of [
        ['Portcullis', port],
        ['bare node:https', barePort],
      ] as const) {
        await measure(p, s.path, headers, { connections, seconds: WARMUP_S }); // warm-up (JIT, TLS session setup), discarded
        console.log(`measuring ${s.id} against ${server} for ${duration} s ...`);
        const r = await measure(p, s.path, headers, { connections, seconds: duration });
        const row: Row = {
          scenario: s.id,
          server,
          rps: r.requests.average,
          p50: r.latency.p50,
          p99: r.latency.p99,
          non2xx: r.non2xx,
          errors: r.errors + r.timeouts,
          total: r.requests.total,
        };
        if (row.non2xx || row.errors) console.log(`  !! ${server} ${s.id}: non2xx=${row.non2xx} errors=${r.errors} timeouts=${r.timeouts} status=${JSON.stringify(r.statusCodeStats)}`);
        rows.push(row);
      }
    }
    await stopChild(bare.child);
    await stopChild(controller.child);

    // ---- report ----
    const cpu = cpus();
    const lines = [
      '# Identity read benchmark',
      '',
      `- Date: ${new Date().toISOString().slice(0, 10)}`,
      `- Node ${process.version}, ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores (load generator and server share them)`,
      `- Dataset: ${fmt(dataset.count)} identities (seed 0x${dataset.seed.toString(16)}), loaded through the identity service in ${(dataset.loadMs / 1000).toFixed(1)} s`,
      `- autocannon: ${connections} connections, ${duration} s per row (after a ${WARMUP_S} s discarded warm-up), HTTPS over 127.0.0.1, keep-alive, no pipelining; latency resolution 1 ms`,
      '',
      ...SCENARIOS.map((s) => `- ${s.id}: \`GET ${s.path}\` (${s.label})`),
      '',
      ...comparisonTable(rows),
      '',
    ];
    const report = lines.join('\n');
    console.log('\n' + report);
    mkdirSync(join('bench', 'results'), { recursive: true });
    writeFileSync(join('bench', 'results', 'identities.md'), report);
    console.log('written to bench/results/identities.md');
  } finally {
    killChildren();
    rmSync(tmp, { recursive: true, force: true });
  }
}

