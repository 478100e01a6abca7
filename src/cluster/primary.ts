/**
 * The cluster primary (`--workers N`, N > 1): forks N worker processes that share the listener (node's
 * round-robin) and keeps them running. It serves nothing and loads none of the controller: its memory stays
 * that of a bare Node process. A worker that dies is replaced; SIGTERM/SIGINT stop every worker (each
 * finishes its in-flight requests and closes the store) and then the primary.
 *
 * The once-per-start work (migrations, PKI, first-start records, the admin credentials print, resetting the
 * shared per-start state) is done by the first worker of the start (`FIRST_START`); the others load their code
 * meanwhile and open the store only once it is done (`waiting` → `prepared`). Workers started later, to
 * replace one that died, never redo it.
 *
 * Messages (src/cluster/messages.ts): a worker sends `listening` once it serves; when all N have, the primary
 * asks the first one to log the ready line (`announce`), so it is printed once. When a worker dies, a living
 * one is asked to drop the state the dead one owned in the store (`worker-gone`: its integrity run, its
 * routers' live rows), or the next to listen if none is, until one confirms (`gone-dropped`).
 */
import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.ts';
import { isBusEnvelope, type BusEnvelope } from '../fabric/bus.ts';
import { START_ROLE_ENV, type PrimaryMessage, type WorkerMessage } from './messages.ts';

/**
 * The young generation of each worker's heap, in MiB per semi-space (V8's default grows it to 16): short-lived
 * request garbage is collected a little more often and each worker holds about 15 MB less after a load, at no
 * measured cost in throughput. An explicit `--max-semi-space-size` (node flag or NODE_OPTIONS) wins.
 */
const WORKER_SEMI_SPACE_MB = 4;

/** Node flags for the workers: the primary's own, plus the semi-space bound unless one is set already. */
export function workerExecArgv(execArgv: readonly string[], nodeOptions = ''): string[] {
  const set = [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(a));
  return set ? [...execArgv] : [...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
}

/** A worker that dies sooner than this after its start is replaced only after a pause (no crash loop). */
const QUICK_DEATH_MS = 10_000;
const RESTART_PAUSE_MS = 1_000;
/** How long stopping workers may take before they are killed. */
const STOP_GRACE_MS = 30_000;

interface WorkerState {
  startedAt: number;
  origin?: string;
  listening: boolean;
}

export async function runPrimary(config: Config): Promise<void> {
  cluster.setupPrimary({ execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS) });
  const states = new Map<Worker, WorkerState>();
  let prepared = false;
  const waiting = new Set<Worker>();
  /**
   * Dead workers (by origin) whose rows are to be dropped, with the worker asked to do it, until it confirms:
   * a job given to a worker that dies too (both killed at once) is given to the next one.
   */
  const gone = new Map<string, Worker | undefined>();
  let announced = false;
  let stopping = false;
  let exitCode = 0;

  const tell = (worker: Worker, message: PrimaryMessage) => {
    if (!worker.isDead()) worker.send(message);
  };

  const handOverGone = () => {
    const heir = [...states].find(([w, s]) => s.listening && !w.isDead())?.[0];
    if (!heir) return;
    for (const [origin, asked] of gone) {
      if (asked && states.has(asked) && !asked.isDead()) continue;
      gone.set(origin, heir);
      tell(heir, { type: 'worker-gone', origin });
    }
  };

  const fork = (role: 'first' | 'after-first' | 'replacement') => {
    const worker = cluster.fork({ [START_ROLE_ENV]: role });
    states.set(worker, { startedAt: Date.now(), listening: false });
    // A message to a worker that is dying but not yet reaped fails with EPIPE, emitted as 'error': without a
    // listener that would end the primary. The 'exit' handler takes care of the worker; what it was asked is
    // asked of another one (handOverGone).
    worker.on('error', () => undefined);
    worker.on('message', (message: WorkerMessage | BusEnvelope) => {
      if (isBusEnvelope(message)) {
        // Fabric messages between workers (src/fabric/bus.ts): handed to the worker of that name, if it lives.
        for (const [other, s] of states) if (s.origin === message.to && !other.isDead()) other.send(message);
        return;
      }
      const state = states.get(worker);
      if (!state) return;
      switch (message?.type) {
        case 'waiting':
          if (prepared) tell(worker, { type: 'prepared' });
          else waiting.add(worker);
          return;
        case 'prepared':
          prepared = true;
          for (const w of waiting) tell(w, { type: 'prepared' });
          waiting.clear();
          return;
        case 'gone-dropped':
          gone.delete(message.origin);
          return;
        case 'listening':
          state.listening = true;
          state.origin = message.origin;
          handOverGone();
          if (!announced && states.size === config.workers && [...states.values()].every((s) => s.listening)) {
            announced = true;
            tell(worker, { type: 'announce', workers: config.workers });
          }
          return;
      }
    });
  };

  const finish = () => {
    if (states.size > 0) return;
    process.exit(exitCode);
  };

  const stopAll = (code: number) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    for (const worker of states.keys()) if (!worker.isDead()) worker.process.kill('SIGTERM');
    setTimeout(() => {
      for (const worker of states.keys()) if (!worker.isDead()) worker.process.kill('SIGKILL');
    }, STOP_GRACE_MS).unref();
    finish();
  };

  cluster.on('exit', (worker, code, signal) => {
    const state = states.get(worker);
    states.delete(worker);
    waiting.delete(worker);
    if (stopping) return finish();
    if (!announced) {
      // A worker that can not start (port taken, bad data dir...) would fail again: give up.
      process.stderr.write(`worker ${worker.id} exited during start (code ${code ?? signal})\n`);
      return stopAll(1);
    }
    if (code === 0 && signal === null) return stopAll(0); // it was told to stop (a signal to the process group)
    if (state?.origin) {
      // Its routers' connections died with it (they reconnect to the other workers), and so did any integrity run.
      gone.set(state.origin, undefined);
    }
    handOverGone(); // and passes on what the dead worker had been asked to drop
    process.stderr.write(`worker ${worker.id} died (${signal ?? `code ${code}`}); starting a new one\n`);
    const quick = state !== undefined && Date.now() - state.startedAt < QUICK_DEATH_MS;
    if (quick) setTimeout(() => stopping || fork('replacement'), RESTART_PAUSE_MS);
    else fork('replacement');
  });

  process.on('SIGTERM', () => stopAll(0));
  process.on('SIGINT', () => stopAll(0));
  fork('first');
  for (let i = 1; i < config.workers; i++) fork('after-first');
}
