/**
 * Authentication scenarios: S4 restart then re-authentication and re-listing, S5 password and certificate
 * authentication, S10 a burst of one-time-token enrollments.
 */
import { Agent, request } from 'node:https';
import { x509 } from '../../src/pki/x509-library.ts';
import { HOST, percentileOf, pool, procStats, stopChild, withServerStats, type ClientTls } from '../lib.ts';
import { Bench, CLIENT, MANAGEMENT, postJson, type ResultRow } from './context.ts';

const BURST = 250;

export async function s5(b: Bench): Promise<void> {
  const u = b.user('typical');
  b.notes.push('Every request creates an API session. Password: the typical identity (argon2id verification per request). Certificate: mutual TLS on keep-alive connections (one handshake per connection).');
  await b.loadPair('password (argon2id)', () => postJson(`${CLIENT}/authenticate?method=password`, { username: u.username, password: u.password }), { status: 200, maxRequests: 20_000 });
  const cu = b.dataset.certUsers[0];
  if (!cu) throw new Error('the dataset has no certificate user');
  await b.loadPair('certificate (mutual TLS)', () => postJson(`${CLIENT}/authenticate?method=cert`, {}), { status: 200, tls: { cert: cu.certPem, key: cu.keyPem }, maxRequests: 50_000 });
}

export async function s10(b: Bench): Promise<void> {
  const prepared = await prepareOtt(b, BURST, 's10');
  b.notes.push(
    `${BURST} identities with an ott enrollment and ${BURST} EC P-256 CSRs prepared beforehand; then all ${BURST} POST /enroll?method=ott ` +
      '(raw CSR, application/x-pem-file) fired at once, each on its own new TLS connection. Latency from the start of the connection to the end of the response. ' +
      'Tokens are single-use, so there is no closed or open loop: the burst is the scenario. Bare replays the first enrollment response.',
  );
  const t0 = performance.now();
  const results = await withServerStats(b.pid, () => Promise.all(prepared.map((p) => oneShot(b.port, 'POST', `${CLIENT}/enroll?method=ott&token=${p.token}`, { 'content-type': 'application/x-pem-file' }, p.csrPem))));
  const wall = performance.now() - t0;
  const bad = results.result.filter((r) => r.status !== 200);
  if (bad.length) throw new Error(`S10: ${bad.length} enrollments failed, e.g. ${bad[0]!.status} ${bad[0]!.body.slice(0, 300)}`);
  b.push(burstRow(`burst of ${BURST} OTT enrollments`, 'portcullis', results.result.map((r) => r.ms), wall, results.cpuPct, results.rssMb));
  const first = results.result[0]!;
  const bare = await b.startBare({ [`${CLIENT}/enroll`]: { status: 200, contentType: first.contentType, bodyBase64: Buffer.from(first.body).toString('base64') } });
  try {
    const t1 = performance.now();
    const br = await withServerStats(bare.pid, () => Promise.all(prepared.map((p) => oneShot(bare.port, 'POST', `${CLIENT}/enroll?method=ott&token=${p.token}`, { 'content-type': 'application/x-pem-file' }, p.csrPem))));
    b.push(burstRow(`burst of ${BURST} OTT enrollments`, 'bare', br.result.map((r) => r.ms), performance.now() - t1, br.cpuPct, br.rssMb));
  } finally {
    await stopChild(bare.child);
  }
}

export async function s4(b: Bench): Promise<void> {
  const count = Math.min(b.opts.sessions, 200);
  // Certificate identities for the re-authentication (argon2id passwords for 100k identities are not feasible).
  const prepared = await prepareOtt(b, count, 's4');
  const creds: ClientTls[] = [];
  await pool(prepared, 16, async (p) => {
    const r = await oneShot(b.port, 'POST', `${CLIENT}/enroll?method=ott&token=${p.token}`, { 'content-type': 'application/x-pem-file' }, p.csrPem);
    if (r.status !== 200) throw new Error(`S4 enrollment failed: ${r.status} ${r.body.slice(0, 300)}`);
    creds.push({ cert: (JSON.parse(r.body) as { data: { cert: string } }).data.cert, key: p.keyPem });
  });
  b.notes.push(
    `Restart: the controller is stopped (SIGTERM) and started again on the same data; "cold start" is spawn → first 200 of GET /edge/client/v1/version. ` +
      `Then ${count} certificate identities (a bounded sample: re-authenticating every identity with argon2id passwords is not feasible in bounded time) ` +
      `each open a new TLS connection with their client certificate, POST /authenticate?method=cert and re-list GET /services?limit=500 on the same connection, ` +
      `${b.opts.connections} identities at a time. Per-identity latency covers handshake, authentication and listing. The same procedure runs against a bare server replaying both responses.`,
  );
  await b.stopController();
  const t0 = performance.now();
  await b.startController();
  const cold = await firstServed(b.port, t0);
  const afterStart = procStats(b.pid);
  const relist = await reauth(b.port, b.pid, creds, b.opts.connections);
  const bad = relist.failures;
  if (bad) throw new Error(`S4: ${bad} re-authentications failed`);
  // Bare: capture one authentication and one listing to replay.
  const cap = await reauthCapture(b.port, creds[0]!);
  const tb = performance.now();
  const bare = await b.startBare(cap);
  try {
    const bareCold = await firstServed(bare.port, tb);
    const bareRelist = await reauth(bare.port, bare.pid, creds, b.opts.connections);
    b.metric({ name: 'cold start to first served request', unit: 'ms', portcullis: cold, bare: bareCold });
    b.metric({ name: 'RSS right after restart', unit: 'MB', portcullis: afterStart.rssMb, bare: procStats(bare.pid).rssMb });
    b.metric({ name: `re-authenticate + re-list ${count} identities, wall time`, unit: 'ms', portcullis: relist.wallMs, bare: bareRelist.wallMs });
    b.push(burstRow(`re-auth + re-list × ${count} after restart`, 'portcullis', relist.latencies, relist.wallMs, relist.cpuPct, relist.rssMb, b.opts.connections));
    b.push(burstRow(`re-auth + re-list × ${count} after restart`, 'bare', bareRelist.latencies, bareRelist.wallMs, bareRelist.cpuPct, bareRelist.rssMb, b.opts.connections));
  } finally {
    await stopChild(bare.child);
  }
}

// ---- helpers --------------------------------------------------------------------------------------------------

function burstRow(load: string, server: 'portcullis' | 'bare', latencies: number[], wallMs: number, cpuPct: number, rssMb: number, connections = latencies.length): ResultRow {
  const sorted = [...latencies].sort((x, y) => x - y);
  return {
    load,
    server,
    mode: 'burst',
    connections,
    rps: latencies.length / (wallMs / 1000),
    p50: percentileOf(sorted, 50),
    p99: percentileOf(sorted, 99),
    p999: percentileOf(sorted, 99.9),
    non2xx: 0,
    errors: 0,
    total: latencies.length,
    cpuPct,
    rssMb,
  };
}

interface PreparedOtt {
  token: string;
  csrPem: string;
  keyPem: string;
}

/** Identities with an ott enrollment (through the management API) and one EC P-256 key + CSR each. */
async function prepareOtt(b: Bench, count: number, tag: string): Promise<PreparedOtt[]> {
  const api = b.api(8);
  api.setToken(await b.adminToken());
  const run = Date.now().toString(36);
  const out: PreparedOtt[] = new Array(count);
  const t0 = performance.now();
  await pool(
    Array.from({ length: count }, (_, i) => i),
    8,
    async (i) => {
      const name = `bench-${tag}-${run}-${String(i).padStart(4, '0')}`;
      const created = await api.must('POST', `${MANAGEMENT}/identities`, { name, type: 'Default', isAdmin: false, enrollment: { ott: true } }, 201);
      const detail = await api.must('GET', `${MANAGEMENT}/identities/${created.data.id}`, undefined, 200);
      const token = detail.data.enrollment?.ott?.token as string | undefined;
      if (!token) throw new Error(`identity ${name} has no ott token`);
      out[i] = { token, ...(await newCsr(name)) };
    },
  );
  api.close();
  console.log(`  ${count} ott identities and CSRs prepared in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return out;
}

async function newCsr(commonName: string): Promise<{ csrPem: string; keyPem: string }> {
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: `CN=${commonName}`, keys, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } });
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  return { csrPem: csr.toString('pem'), keyPem: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n` };
}

interface Shot {
  status: number;
  ms: number;
  body: string;
  contentType: string;
}

/** One request on its own new TLS connection (timed from the connection start). */
function oneShot(port: number, method: string, path: string, headers: Record<string, string>, body?: string, tls?: ClientTls, agent?: Agent): Promise<Shot> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      { host: HOST, port, method, path, headers, rejectUnauthorized: false, servername: 'localhost', timeout: 120_000, ...(agent ? { agent } : { agent: false, ...(tls ?? {}) }) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body: Buffer.concat(chunks).toString('utf8'), contentType: String(res.headers['content-type'] ?? '') }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ status: 0, ms: performance.now() - started, body: String(err), contentType: '' }));
    req.end(body);
  });
}

/** Polls GET /version until it answers 200; returns the ms since `since`. Bounded to 60 s. */
async function firstServed(port: number, since: number): Promise<number> {
  const deadline = performance.now() + 60_000;
  let last = '';
  while (performance.now() < deadline) {
    const r = await oneShot(port, 'GET', `${CLIENT}/version`, { accept: 'application/json' });
    if (r.status === 200) return performance.now() - since;
    last = `${r.status} ${r.contentType} ${r.body.slice(0, 200)} port ${port}`;
    await new Promise((res) => setTimeout(res, 5));
  }
  throw new Error(`no request served within 60 s of the start (last answer: ${last})`);
}

const RELIST = `${CLIENT}/services?limit=500&offset=0`;

/** Each identity: a new TLS connection with its certificate, authenticate, then list its services on it. */
async function reauth(port: number, pid: number, creds: ClientTls[], concurrency: number) {
  const latencies: number[] = [];
  let failures = 0;
  const t0 = performance.now();
  const { cpuPct, rssMb } = await withServerStats(pid, () =>
    pool(creds, concurrency, async (c) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false, servername: 'localhost', ...c });
      const start = performance.now();
      const auth = await oneShot(port, 'POST', `${CLIENT}/authenticate?method=cert`, { 'content-type': 'application/json', accept: 'application/json' }, '{}', undefined, agent);
      if (auth.status !== 200) {
        failures++;
        agent.destroy();
        return;
      }
      const token = (JSON.parse(auth.body) as { data: { token: string } }).data.token;
      const list = await oneShot(port, 'GET', RELIST, { 'zt-session': token, accept: 'application/json' }, undefined, undefined, agent);
      if (list.status !== 200) failures++;
      latencies.push(performance.now() - start);
      agent.destroy();
    }),
  );
  return { latencies, wallMs: performance.now() - t0, cpuPct, rssMb, failures };
}

async function reauthCapture(port: number, c: ClientTls) {
  const auth = await oneShot(port, 'POST', `${CLIENT}/authenticate?method=cert`, { 'content-type': 'application/json' }, '{}', c);
  const token = (JSON.parse(auth.body) as { data: { token: string } }).data.token;
  const list = await oneShot(port, 'GET', RELIST, { 'zt-session': token, accept: 'application/json' });
  const version = await oneShot(port, 'GET', `${CLIENT}/version`, { accept: 'application/json' });
  const enc = (s: Shot) => ({ status: s.status, contentType: s.contentType, bodyBase64: Buffer.from(s.body).toString('base64') });
  return { [`${CLIENT}/authenticate?method=cert`]: enc(auth), [RELIST]: enc(list), [`${CLIENT}/version`]: enc(version) };
}
