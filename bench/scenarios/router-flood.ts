/**
 * S14: the latency of authenticated reads (`GET /current-api-session/service-updates`, the S1 load) while one
 * enrolled router floods its control channel with heartbeats and malformed messages as fast as it can: what the
 * control channel's bounds (src/fabric/channel/admission.ts) leave of the controller for everyone else.
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { closedLoop, openLoop, spawnReady, stopChild, type LoadFigures, type RequestGen } from '../lib.ts';
import { enrollEdgeRouter } from '../fabric-router.ts';
import type { RouterFloodFigures, RouterFloodSpec } from '../router-flood.ts';
import { Bench, CLIENT, WARMUP_S, get } from './context.ts';
import { settle } from './flood.ts';

/** The flood starts this long before the measured reads and ends this long after them. */
const LEAD_MS = 1000;

export interface RouterFloodPhase {
  phase: 'alone' | 'flood';
  reads: { rate: number; rps: number; p50: number; p99: number; max: number; non2xx: number; errors: number; serverCpuPct: number };
  router?: RouterFloodFigures;
}

export interface RouterFloodExtra {
  readCapacity: { rps: number; p99: number; connections: number };
  readRate: number;
  workers: number;
  phases: RouterFloodPhase[];
  /** Flood p99 ÷ alone p99 (the goal: at most 2). */
  p99Ratio: number;
}

export async function s14(b: Bench): Promise<void> {
  const { duration, connections } = b.opts;
  const tokens = await b.manySessions(b.opts.sessions);
  const readGen: RequestGen = (i) => get(`${CLIENT}/current-api-session/service-updates`, tokens[i % tokens.length]!);

  const admin = b.api(2);
  admin.setToken(await b.adminToken());
  const anonymous = b.api(2);
  const creds = await enrollEdgeRouter(admin, anonymous, `bench-s14-flooder-${Date.now().toString(36)}`);
  admin.close();
  anonymous.close();

  await closedLoop(b.port, readGen, { connections, seconds: WARMUP_S, pid: b.pid });
  const cap = await closedLoop(b.port, readGen, { connections, seconds: duration, pid: b.pid });
  if (cap.non2xx || cap.errors) throw new Error(`S14: capacity run had ${cap.non2xx} non-2xx answers and ${cap.errors} errors`);
  const readRate = Math.max(1, Math.min(b.opts.maxRate, Math.round(cap.rps * b.opts.openFraction)));
  console.log(`  service-updates: ${cap.rps.toFixed(0)} req/s closed loop (p99 ${cap.p99} ms); reads at ${readRate}/s`);
  b.metric({ name: `service-updates, closed-loop capacity (c=${connections})`, unit: 'req/s', portcullis: cap.rps });

  await settle(b.pid);
  const alone = phase('alone', await openLoop(b.port, readGen, { rate: readRate, seconds: duration, pid: b.pid }));
  await settle(b.pid);
  const spec: RouterFloodSpec = { port: b.port, ca: b.ca, creds, seconds: duration + (2 * LEAD_MS) / 1000 };
  const { child } = await spawnReady('bench/router-flood.ts', [JSON.stringify(spec)]);
  const result = floodResult(child);
  result.catch(() => undefined); // awaited below
  await sleep(LEAD_MS);
  const during = await openLoop(b.port, readGen, { rate: readRate, seconds: duration, pid: b.pid });
  const router = await result;
  await stopChild(child);
  const flood = phase('flood', during, router);

  const p99Ratio = flood.reads.p99 / alone.reads.p99;
  b.metric({ name: 'service-updates p99, reads alone', unit: 'ms', portcullis: alone.reads.p99 });
  b.metric({ name: 'service-updates p99, during the router flood', unit: 'ms', portcullis: flood.reads.p99, note: `${p99Ratio.toFixed(2)}× alone (goal ≤ 2×)` });
  b.metric({ name: 'controller CPU, reads alone / during the flood', unit: '%', portcullis: flood.reads.serverCpuPct, note: `alone ${alone.reads.serverCpuPct.toFixed(0)} %` });
  b.extra = { readCapacity: { rps: cap.rps, p99: cap.p99, connections }, readRate, workers: b.opts.workers, phases: [alone, flood], p99Ratio } satisfies RouterFloodExtra;
  b.notes.push(
    `Controller with the default worker count, one per core (${b.opts.workers} here), default control-channel bounds. ` +
      `Reads: service-updates over ${tokens.length} API sessions of distinct identities, open loop at ${readRate}/s (${b.opts.openFraction * 100}% of the closed-loop capacity, ` +
      `at most ${b.opts.maxRate}/s), ${duration} s alone, then ${duration} s during the flood. Flood: one enrolled edge router (a separate process) writes ` +
      `heartbeats and, every tenth message, a body its content type can not decode, as fast as its socket takes them, from ${LEAD_MS / 1000} s before the reads ` +
      `to ${LEAD_MS / 1000} s after them; disconnected, it dials again after 50 ms. Controller CPU: all its processes over each read run (100% = one core).`,
  );
}

function phase(name: RouterFloodPhase['phase'], r: LoadFigures, router?: RouterFloodFigures): RouterFloodPhase {
  const p: RouterFloodPhase = {
    phase: name,
    reads: { rate: r.targetRate ?? 0, rps: r.rps, p50: r.p50, p99: r.p99, max: r.max ?? Number.NaN, non2xx: r.non2xx, errors: r.errors, serverCpuPct: r.cpuPct },
    ...(router ? { router } : {}),
  };
  const x = p.reads;
  console.log(
    `  ${name}: reads @${x.rate}/s p50 ${x.p50.toFixed(2)} p99 ${x.p99.toFixed(2)} max ${x.max.toFixed(0)} ms, non-2xx ${x.non2xx}, errors ${x.errors}, controller CPU ${x.serverCpuPct.toFixed(0)} %` +
      (router
        ? ` | router: ${router.sent} messages written (${router.sentPerSecond.toFixed(0)}/s), ${router.bytesIn} bytes back, ${router.connections} connections, ` +
          `${router.failedDials} failed dials, connected ${(router.connectedMs / 1000).toFixed(1)} s`
        : ''),
  );
  return p;
}

async function floodResult(child: ChildProcess): Promise<RouterFloodFigures> {
  for await (const line of createInterface({ input: child.stdout! })) {
    if (line.startsWith('RESULT ')) return JSON.parse(line.slice('RESULT '.length)) as RouterFloodFigures;
  }
  throw new Error(`router flood ended (code ${child.exitCode}, signal ${child.signalCode}) without a result`);
}
