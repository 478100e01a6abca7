/**
 * Child process of scenario S13: an open-loop password-login flood against a running controller, in a process of
 * its own so that sending it does not delay the event loop of the load that is being measured. Prints `READY {}`
 * when its schedule starts and `RESULT {...}` (LoginFloodFigures) when it ends, then exits (requests still queued
 * are abandoned with the process).
 * Usage: node --import tsx bench/login-flood.ts '<LoginFloodSpec as JSON>'
 */
import { openLoop, percentileOf } from './lib.ts';
import { CLIENT, postJson } from './scenarios/context.ts';

export interface LoginFloodSpec {
  port: number;
  /** The controller's pid, for its CPU over the flood. */
  pid: number;
  rate: number;
  seconds: number;
  sockets: number;
  /** A login not answered this long after its scheduled time counts as a timeout (the client gives up). */
  deadlineMs: number;
  users: Array<{ username: string; password: string }>;
}

export interface LoginFloodFigures {
  /** Requested arrival rate and the number of logins scheduled. */
  rate: number;
  scheduled: number;
  ok: number;
  rateLimited: number;
  otherNon2xx: number;
  /** Failures other than timeouts (connection errors). */
  errors: number;
  timeouts: number;
  /** Latency of the successful logins (from the scheduled time), ms. */
  okP50: number;
  okP99: number;
  /** Latency of the 429 answers and of every answer (successes and 429s), ms. */
  shedP99: number;
  allP99: number;
  /** Successful logins per second, from the start of the flood to its last answer. */
  okPerSecond: number;
  serverCpuPct: number;
}

const spec = JSON.parse(process.argv[2] ?? '') as LoginFloodSpec;
const okLatencies: number[] = [];
const shedLatencies: number[] = [];
const r = await openLoop(
  spec.port,
  (i) => {
    const u = spec.users[i % spec.users.length]!;
    return postJson(`${CLIENT}/authenticate?method=password`, { username: u.username, password: u.password });
  },
  {
    rate: spec.rate,
    seconds: spec.seconds,
    sockets: spec.sockets,
    pid: spec.pid,
    deadlineMs: spec.deadlineMs,
    onStart: () => process.stdout.write('READY {}\n'),
    onResult: (x) => {
      if (x.status >= 200 && x.status < 300) okLatencies.push(x.ms);
      else if (x.status === 429) shedLatencies.push(x.ms);
    },
  },
);
okLatencies.sort((a, b) => a - b);
shedLatencies.sort((a, b) => a - b);
const statuses = r.statuses ?? {};
const ok = Object.entries(statuses).reduce((sum, [status, count]) => sum + (Number(status) >= 200 && Number(status) < 300 ? count : 0), 0);
const figures: LoginFloodFigures = {
  rate: spec.rate,
  scheduled: Math.max(1, Math.round(spec.rate * spec.seconds)),
  ok,
  rateLimited: statuses['429'] ?? 0,
  otherNon2xx: r.non2xx - (statuses['429'] ?? 0),
  errors: r.errors - (r.timeouts ?? 0),
  timeouts: r.timeouts ?? 0,
  okP50: percentileOf(okLatencies, 50),
  okP99: percentileOf(okLatencies, 99),
  shedP99: percentileOf(shedLatencies, 99),
  allP99: r.p99,
  okPerSecond: r.total > 0 ? (ok * r.rps) / r.total : 0,
  serverCpuPct: r.cpuPct,
};
process.stdout.write(`RESULT ${JSON.stringify(figures)}\n`, () => process.exit(0));
