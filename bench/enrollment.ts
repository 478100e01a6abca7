/**
 * Enrollment suite (no dataset): on a fresh controller,
 *  1. a burst of one-time-token enrollments: N identities with `enrollment: {ott: true}` are created through
 *     the management API and N EC P-256 CSRs are generated first; then all N `POST /enroll?method=ott` are
 *     fired at once, each on its own TLS connection, as N SDKs enrolling together would. Reported: enrollments
 *     per second over the burst's wall time, p50/p99 latency of the individual requests;
 *  2. certificate authentication: `POST /authenticate?method=cert` over mutual TLS with one of the enrolled
 *     certificates (autocannon, keep-alive, bounded by time and by a request count), next to password
 *     authentication of the default admin as a reference point.
 * Everything runs on 127.0.0.1. Run through `npm run bench -- --suite enrollment`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:https';
import { x509 } from '../src/pki/x509-library.ts';
import { BENCH_ADMIN_PASSWORD } from './datasets/identities.ts';
import autocannon from 'autocannon';
import { HOST, apiClient, fmt, killChildren, ms, pool, spawnReady, stopChild } from './lib.ts';

export interface EnrollmentSuiteOptions {
  /** Enrollments in the burst. */
  enrollments: number;
  /** Seconds per authentication measurement. */
  duration: number;
  connections: number;
}

const WARMUP_S = 2;
/** Upper bound on requests per authentication measurement, whatever the duration. */
const MAX_AUTH_REQUESTS = 200_000;
const CREATE_CONCURRENCY = 8;

interface Prepared {
  token: string;
  csrPem: string;
  keyPem: string;
}

interface EnrollResult {
  status: number;
  ms: number;
  certPem: string;
  contentType: string;
}

export async function runEnrollmentSuite(opts: EnrollmentSuiteOptions): Promise<void> {
  const { enrollments: count, duration, connections } = opts;
  const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-bench-enroll-'));
  try {
    console.log('controller: starting (child process, fresh data directory) ...');
    const controller = await spawnReady<{ port: number; caBundlePem: string }>('bench/serve.ts', [dataDir, '0']);
    const { port, caBundlePem: ca } = controller.info;
    const api = apiClient(port, ca, CREATE_CONCURRENCY);
    const admin = await api.must('POST', '/edge/management/v1/authenticate?method=password', { username: 'admin', password: BENCH_ADMIN_PASSWORD }, 200);
    api.setToken(admin.data.token as string);

    // ---- preparation: identities with an ott enrollment, and one key + CSR per identity ----------------------
    console.log(`preparing ${count} identities with ott enrollments and ${count} EC P-256 CSRs ...`);
    const runTag = Date.now().toString(36);
    const prepared: Prepared[] = new Array(count);
    await pool(
      Array.from({ length: count }, (_, i) => i),
      CREATE_CONCURRENCY,
      async (i) => {
        const name = `bench-ott-${runTag}-${String(i).padStart(4, '0')}`;
        const created = await api.must('POST', '/edge/management/v1/identities', { name, type: 'Default', isAdmin: false, enrollment: { ott: true } }, 201);
        const detail = await api.must('GET', `/edge/management/v1/identities/${created.data.id}`, undefined, 200);
        const token = detail.data.enrollment?.ott?.token as string | undefined;
        if (!token) throw new Error(`identity ${name} has no ott enrollment token: ${JSON.stringify(detail.data.enrollment)}`);
        prepared[i] = { token, ...(await newCsr(name)) };
      },
    );
    api.close();

    // ---- the burst ------------------------------------------------------------------------------------------
    console.log(`firing ${count} concurrent POST /enroll?method=ott ...`);
    const t0 = performance.now();
    const results = await Promise.all(prepared.map((p) => enrollOtt(port, ca, p)));
    const wallMs = performance.now() - t0;
    const failed = results.filter((r) => r.status !== 200);
    if (failed.length > 0) {
      throw new Error(`${failed.length} of ${count} enrollments failed, e.g. ${failed[0]!.status} ${failed[0]!.certPem.slice(0, 300)}`);
    }
    const badType = results.find((r) => r.contentType !== 'application/json');
    if (badType) throw new Error(`enroll answered content type ${badType.contentType}, expected application/json`);
    const latencies = results.map((r) => r.ms).sort((a, b) => a - b);
    const perSecond = count / (wallMs / 1000);
    console.log(`burst: ${count} enrollments in ${fmt(wallMs)} ms (${fmt(perSecond, 1)}/s), p50 ${fmt(percentile(latencies, 50))} ms, p99 ${fmt(percentile(latencies, 99))} ms`);

    // ---- certificate authentication ---------------------------------------------------------------------------
    const probe = prepared[0]!;
    const clientCert = results[0]!.certPem;
    const certAuth = await authenticateOnce(port, ca, clientCert, probe.keyPem);
    if (certAuth.status !== 200) throw new Error(`cert authentication with an enrolled certificate failed: ${certAuth.status} ${certAuth.body.slice(0, 300)}`);
    const authRows: Array<{ label: string; rps: number; p50: number; p99: number; non2xx: number; errors: number; total: number }> = [];
    const scenarios = [
      {
        label: 'POST /authenticate?method=cert (mutual TLS, enrolled certificate)',
        path: '/edge/client/v1/authenticate?method=cert',
        body: '{}',
        tlsOptions: { cert: clientCert, key: probe.keyPem },
      },
      {
        label: 'POST /authenticate?method=password (admin; reference)',
        path: '/edge/client/v1/authenticate?method=password',
        body: JSON.stringify({ username: 'admin', password: BENCH_ADMIN_PASSWORD }),
        tlsOptions: {},
      },
    ];
    for (const s of scenarios) {
      const run = (seconds: number) =>
        autocannon({
          url: `https://${HOST}:${port}${s.path}`,
          connections,
          method: 'POST',
          body: s.body,
          headers: { accept: 'application/json', 'content-type': 'application/json' },
          duration: seconds,
          maxOverallRequests: MAX_AUTH_REQUESTS,
          timeout: 10,
          // autocannon forces rejectUnauthorized:false itself; loopback only. The client certificate rides along.
          tlsOptions: { servername: 'localhost', ...s.tlsOptions },
        });
      await run(WARMUP_S);
      console.log(`measuring ${s.label} for ${duration} s ...`);
      const r = await run(duration);
      if (r.non2xx || r.errors || r.timeouts) console.log(`  !! ${s.label}: ${JSON.stringify(r.statusCodeStats)} errors=${r.errors} timeouts=${r.timeouts}`);
      authRows.push({ label: s.label, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts, total: r.requests.total });
    }
    await stopChild(controller.child);

    const cpu = cpus();
    const lines = [
      '# Enrollment benchmark',
      '',
      `- Date: ${new Date().toISOString().slice(0, 10)}`,
      `- Node ${process.version}, ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores (load generator and server share them)`,
      '- Fresh controller (no dataset), HTTPS over 127.0.0.1',
      '',
      '## One-time-token enrollment burst',
      '',
      `${count} identities with \`enrollment: {ott: true}\` created through the management API beforehand, ${count} EC P-256 ` +
        `keys and CSRs generated beforehand; then all ${count} \`POST /edge/client/v1/enroll?method=ott&token=…\` ` +
        '(`Content-Type: application/x-pem-file`, raw CSR, as the Go SDK sends it) fired at once, each on a new TLS connection. ' +
        'Each enrollment verifies the CSR, signs a certificate with the intermediate CA and, in one transaction, consumes ' +
        'the enrollment and creates the cert authenticator.',
      '',
      '| Enrollments | Wall time ms | Enrollments/s | p50 ms | p99 ms | max ms | failures |',
      '|---:|---:|---:|---:|---:|---:|---:|',
      `| ${count} | ${fmt(wallMs)} | ${fmt(perSecond, 1)} | ${fmt(percentile(latencies, 50))} | ${fmt(percentile(latencies, 99))} | ${fmt(latencies[latencies.length - 1]!)} | 0 |`,
      '',
      'Latency is per request, from the start of the TLS connection to the end of the response; under a burst it is mostly queueing.',
      '',
      '## Authentication',
      '',
      `autocannon: ${connections} connections, keep-alive (one TLS handshake per connection), ${duration} s per row after a ` +
        `${WARMUP_S} s discarded warm-up, at most ${fmt(MAX_AUTH_REQUESTS)} requests per row. Every request creates an API session.`,
      '',
      '| Scenario | req/s | p50 ms | p99 ms | requests | non-2xx | errors |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...authRows.map((r) => `| ${r.label} | ${fmt(r.rps)} | ${ms(r.p50)} | ${ms(r.p99)} | ${fmt(r.total)} | ${r.non2xx} | ${r.errors} |`),
      '',
    ];
    const report = lines.join('\n');
    console.log('\n' + report);
    mkdirSync(join('bench', 'results'), { recursive: true });
    writeFileSync(join('bench', 'results', 'enrollment.md'), report);
    console.log('written to bench/results/enrollment.md');
  } finally {
    killChildren();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function newCsr(commonName: string): Promise<{ csrPem: string; keyPem: string }> {
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `C=US, O=Portcullis Bench, CN=${commonName}`,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
  });
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  return { csrPem: csr.toString('pem'), keyPem };
}

/** One enrollment on its own TLS connection; resolves with status, latency and the returned chain. */
function enrollOtt(port: number, ca: string, p: Prepared): Promise<EnrollResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: HOST,
        port,
        method: 'POST',
        path: `/edge/client/v1/enroll?method=ott&token=${p.token}`,
        headers: { 'content-type': 'application/x-pem-file', 'content-length': String(Buffer.byteLength(p.csrPem)) },
        ca,
        servername: 'localhost',
        agent: false,
        timeout: 120_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let certPem = text;
          if (res.statusCode === 200) certPem = (JSON.parse(text) as { data: { cert: string } }).data.cert;
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, certPem, contentType: String(res.headers['content-type'] ?? '') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('enroll timed out')));
    req.on('error', reject);
    req.end(p.csrPem);
  });
}

function authenticateOnce(port: number, ca: string, cert: string, key: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: HOST,
        port,
        method: 'POST',
        path: '/edge/client/v1/authenticate?method=cert',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        ca,
        cert,
        key,
        servername: 'localhost',
        agent: false,
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}
