/**
 * Many controllers and many routers, simulated on this machine: `npm run bench -- --suite ha-scale [--controllers 10
 * --routers 200 --repeats 10]`.
 *
 * K Portcullis controllers (`node dist/main.js --workers 1`, one data dir and port each) on one private PostgreSQL
 * server form one network. N scripted routers (bench/fabric-router.ts, in this process) are enrolled and each keeps
 * a control channel to every controller, as upstream routers do (K × N channels); each subscribes to the router data
 * model on one controller (spread evenly), as a router subscribes to its most responsive one. Measured:
 * - memory: each controller's settled RSS before any router and with the N routers; the growth divided by N is the
 *   memory one router-controller pair costs;
 * - CPU at rest with the N routers connected (heartbeats): per controller per second;
 * - fan-out of one change: a service policy's identityRoles PATCHed on the first controller (an identity added,
 *   then removed), R times each: time from the write's answer until every router has the change set, bytes per
 *   router, and each controller's CPU per change (the leader builds the set once; the others read it from the store
 *   and send it to their subscribed routers).
 * Everything is on 127.0.0.1, bounded in count and time; every process is stopped at the end. Results:
 * bench/results/ha-scale.json and .md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { message, type ChannelMessage } from '../src/fabric/channel/message.ts';
import { EdgeContentType } from '../src/fabric/proto/edge-ctrl.ts';
import { decode, encode } from '../src/fabric/proto/index.ts';
import { startTestPostgres } from '../test/support/postgres.ts';
import { BenchRouter, enrollEdgeRouter, type BenchRouterCredentials } from './fabric-router.ts';
import { freePort, settledRssMb } from './fabric.ts';
import { apiClient, fmt, machine, percentileOf, pool, procStats, stopChild } from './lib.ts';

export interface HaScaleOptions {
  controllers: number;
  routers: number;
  repeats: number;
}

const MANAGEMENT = '/edge/management/v1';
const PASSWORD = 'Ha-scale-bench-1!';

interface Ctl {
  index: number;
  port: number;
  dataDir: string;
  child: ChildProcess;
  id: string;
}

function startController(repo: string, dataDir: string, port: number, url: string, secretFile: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['dist/main.js', '--data-dir', dataDir, '--address', '127.0.0.1', '--port', String(port), '--advertise', '127.0.0.1', '--workers', '1',
      '--admin-user', 'admin', '--admin-password', PASSWORD, '--log-level', 'info', '--cluster-secret-file', secretFile],
    { cwd: repo, env: { ...process.env, PORTCULLIS_DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`controller on ${port} not ready in 60 s: ${out.slice(-2000)}`));
    }, 60_000);
    const seen = (chunk: Buffer) => {
      out = (out + chunk.toString()).slice(-20_000);
      if (out.includes('Portcullis ready')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.on('exit', (code) => reject(new Error(`controller on ${port} exited (${code}): ${out.slice(-2000)}`)));
  });
}

/** A scripted router subscribed on one controller: the change sets it got, by index. */
class Subscriber {
  sets = new Map<bigint, { at: number; bytes: number }>();
  index = 0n;
  private waiters: Array<() => void> = [];
  constructor(readonly router: BenchRouter) {}

  receive(msg: ChannelMessage, at: number, bytes: number): void {
    if (msg.contentType === EdgeContentType.DataState) {
      this.index = decode('edge.DataState', msg.body).endIndex;
    } else if (msg.contentType === EdgeContentType.DataStateChangeSet) {
      const set = decode('edge.DataState.ChangeSet', msg.body);
      if (set.isSynthetic) return;
      this.index = set.index;
      this.sets.set(set.index, { at, bytes });
    } else return;
    for (const w of this.waiters.splice(0)) w();
  }

  async until(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`router ${this.router.creds.name}: timed out at index ${this.index}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
}

export async function runHaScale(opts: HaScaleOptions): Promise<void> {
  const repo = process.cwd();
  const work = mkdtempSync(join(tmpdir(), 'portcullis-ha-scale-'));
  const secretFile = join(work, 'secret');
  writeFileSync(secretFile, randomBytes(32).toString('base64'), { mode: 0o600 });
  const server = await startTestPostgres({ durable: true });
  const ctls: Ctl[] = [];
  const routers: BenchRouter[] = [];
  try {
    for (let i = 0; i < opts.controllers; i++) {
      const port = await freePort();
      const dataDir = join(work, `c${i}`);
      const child = await startController(repo, dataDir, port, server.url, secretFile);
      ctls.push({ index: i, port, dataDir, child, id: '' });
      console.log(`controller ${i + 1}/${opts.controllers} ready on ${port}`);
    }
    const ca = readFileSync(join(ctls[0]!.dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
    const admin = apiClient(ctls[0]!.port, ca);
    const anonymous = apiClient(ctls[0]!.port, ca);
    const login = await admin.must('POST', `${MANAGEMENT}/authenticate?method=password`, { username: 'admin', password: PASSWORD }, 200);
    admin.setToken(login.data.token);
    const rssBefore = await Promise.all(ctls.map((c) => settledRssMb(c.child.pid!)));

    // Routers: enrolled through the first controller, connected to all, subscribed on one each.
    const extra = Math.max(1, Math.round(opts.routers / 10));
    const creds: BenchRouterCredentials[] = new Array(opts.routers + extra);
    await pool([...Array(opts.routers + extra).keys()], 8, async (i) => {
      creds[i] = await enrollEdgeRouter(admin, anonymous, `ha-scale-${i}-${randomBytes(3).toString('hex')}`);
    });
    console.log(`${opts.routers} routers enrolled`);
    const subscribers: Subscriber[] = [];
    const connectStarted = performance.now();
    await pool([...Array(opts.routers).keys()], 16, async (i) => {
      const home = i % ctls.length;
      for (const c of ctls) {
        let sub: Subscriber | undefined;
        const router = await BenchRouter.connect(c.port, ca, creds[i]!, {
          sync: true,
          dataModel: c.index === home ? (msg, at, bytes) => sub?.receive(msg, at, bytes) : undefined,
        });
        routers.push(router);
        if (c.index === home) {
          sub = new Subscriber(router);
          subscribers.push(sub);
          router.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionId: randomBytes(8).toString('hex'), subscriptionDurationSeconds: 360 })));
        }
      }
    });
    await Promise.all(subscribers.map((s) => s.until(() => s.index > 0n, 120_000)));
    const connectS = (performance.now() - connectStarted) / 1000;
    console.log(`${routers.length} control channels up, ${subscribers.length} subscriptions synced in ${fmt(connectS, 1)} s`);
    const rssAfter = await Promise.all(ctls.map((c) => settledRssMb(c.child.pid!, 3000)));
    const perPairKb = ctls.map((_, i) => ((rssAfter[i]! - rssBefore[i]!) * 1024) / opts.routers);
    // The growth above includes what K × N handshakes at once left in the heap: a few more routers, one at a time, give
    // the cost of one more pair once the controllers have settled.
    for (let i = opts.routers; i < opts.routers + extra; i++) {
      for (const c of ctls) routers.push(await BenchRouter.connect(c.port, ca, creds[i]!, { sync: true }));
    }
    const rssExtra = await Promise.all(ctls.map((c) => settledRssMb(c.child.pid!, 3000)));
    const marginalKb = ctls.map((_, i) => ((rssExtra[i]! - rssAfter[i]!) * 1024) / extra);

    // Rest: CPU per controller per second with every router connected (heartbeats).
    console.log(`${extra} more routers connected to every controller, one at a time`);
    const restS = 10;
    const cpu0 = ctls.map((c) => procStats(c.child.pid!).cpuMs);
    await new Promise((r) => setTimeout(r, restS * 1000));
    const restCpu = ctls.map((c, i) => (procStats(c.child.pid!).cpuMs - cpu0[i]!) / restS);

    // Fan-out: an identity in and out of a policy, R times each.
    const identity = (await admin.must('POST', `${MANAGEMENT}/identities`, { name: `ha-scale-id-${randomBytes(3).toString('hex')}`, type: 'User', isAdmin: false }, 201)).data.id as string;
    const service = (await admin.must('POST', `${MANAGEMENT}/services`, { name: `ha-scale-svc-${randomBytes(3).toString('hex')}`, encryptionRequired: true }, 201)).data.id as string;
    const policy = (await admin.must('POST', `${MANAGEMENT}/service-policies`, { name: `ha-scale-sp-${randomBytes(3).toString('hex')}`, type: 'Dial', semantic: 'AnyOf', identityRoles: [], serviceRoles: [`@${service}`] }, 201)).data.id as string;
    await new Promise((r) => setTimeout(r, 2000));
    const latencies: number[] = [];
    const bytes: number[] = [];
    const cpuStart = ctls.map((c) => procStats(c.child.pid!).cpuMs);
    for (let r = 0; r < opts.repeats * 2; r++) {
      const roles = r % 2 === 0 ? [`@${identity}`] : [];
      const before = subscribers.map((s) => s.index);
      await admin.must('PATCH', `${MANAGEMENT}/service-policies/${policy}`, { identityRoles: roles }, 200);
      const answeredAt = performance.now();
      await Promise.all(subscribers.map((s, i) => s.until(() => s.index > before[i]!, 30_000)));
      const arrivals = subscribers.map((s) => s.sets.get(s.index)!);
      latencies.push(Math.max(...arrivals.map((a) => a.at)) - answeredAt);
      bytes.push(arrivals.reduce((n, a) => n + a.bytes, 0) / arrivals.length);
    }
    const changes = opts.repeats * 2;
    const cpuPerChange = ctls.map((c, i) => (procStats(c.child.pid!).cpuMs - cpuStart[i]!) / changes);

    const sorted = [...latencies].sort((a, b) => a - b);
    const result = {
      machine: machine(),
      command: `npm run bench -- --suite ha-scale --controllers ${opts.controllers} --routers ${opts.routers} --repeats ${opts.repeats}`,
      controllers: opts.controllers,
      routers: opts.routers,
      channels: routers.length,
      connectAndSyncS: connectS,
      rssBeforeMb: rssBefore,
      rssAfterMb: rssAfter,
      perPairKb,
      extraRouters: extra,
      marginalPairKb: marginalKb,
      restCpuMsPerS: restCpu,
      fanOut: {
        changes,
        allRoutersMs: { p50: percentileOf(sorted, 50), p95: percentileOf(sorted, 95), max: sorted[sorted.length - 1] },
        bytesPerRouter: bytes.reduce((a, b) => a + b, 0) / bytes.length,
        cpuMsPerChange: cpuPerChange,
      },
    };
    const median = (xs: number[]) => percentileOf([...xs].sort((a, b) => a - b), 50);
    const lines = [
      `# ${opts.controllers} controllers × ${opts.routers} routers on one PostgreSQL (simulated routers)`,
      '',
      `Command: \`${result.command}\`. Machine: ${result.machine.cpu}, ${result.machine.cores} cores, ${result.machine.memGb} GB, Node ${result.machine.node}.`,
      `Controllers \`--workers 1\`; PostgreSQL with its default durability on the same machine; the ${opts.routers} scripted routers and the load in the bench process.`,
      '',
      '| figure | median over controllers | min | max |',
      '|---|---|---|---|',
      `| RSS before routers (MB) | ${fmt(median(rssBefore), 1)} | ${fmt(Math.min(...rssBefore), 1)} | ${fmt(Math.max(...rssBefore), 1)} |`,
      `| RSS with ${opts.routers} routers (MB) | ${fmt(median(rssAfter), 1)} | ${fmt(Math.min(...rssAfter), 1)} | ${fmt(Math.max(...rssAfter), 1)} |`,
      `| RSS growth ÷ routers, all connecting at once (KB per router-controller pair) | ${fmt(median(perPairKb), 1)} | ${fmt(Math.min(...perPairKb), 1)} | ${fmt(Math.max(...perPairKb), 1)} |`,
      `| CPU at rest with ${opts.routers} routers (ms per s) | ${fmt(median(restCpu), 1)} | ${fmt(Math.min(...restCpu), 1)} | ${fmt(Math.max(...restCpu), 1)} |`,
      `| CPU per policy change (ms) | ${fmt(median(cpuPerChange), 1)} | ${fmt(Math.min(...cpuPerChange), 1)} | ${fmt(Math.max(...cpuPerChange), 1)} |`,
      '',
      `Fan-out of one policy change to all ${opts.routers} routers (${changes} changes, from the write's answer until the last router had the set): ` +
        `p50 ${fmt(result.fanOut.allRoutersMs.p50, 1)} ms, p95 ${fmt(result.fanOut.allRoutersMs.p95, 1)} ms, max ${fmt(result.fanOut.allRoutersMs.max!, 1)} ms; ` +
        `${fmt(result.fanOut.bytesPerRouter)} bytes per router per change. ${routers.length} control channels up and ${opts.routers} subscriptions synced in ${fmt(connectS, 1)} s.`,
      '',
      `${extra} more routers connected afterwards, one at a time, moved each controller's RSS by ${fmt(Math.min(...marginalKb))} to ${fmt(Math.max(...marginalKb))} KB per pair ` +
        '(in the JSON): the heap grows in steps, so that figure is noise at this count, and only the growth over all routers is given above.',
      '',
    ];
    writeFileSync(join(repo, 'bench', 'results', 'ha-scale.json'), JSON.stringify(result, null, 2) + '\n');
    writeFileSync(join(repo, 'bench', 'results', 'ha-scale.md'), lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    for (const r of routers) r.close();
    for (const c of ctls) await stopChild(c.child).catch(() => undefined);
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
