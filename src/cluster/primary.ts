/**
 * The cluster primary (`--workers N`, N > 1): does the once-per-start work (migrations, PKI, first-start
 * records, the admin credentials print) and then forks N worker processes that share the listener (node's
 * round-robin). It serves nothing itself. A worker that dies is replaced; SIGTERM/SIGINT stop every worker
 * (each finishes its in-flight requests and closes the store) and then the primary.
 *
 * Messages: a worker sends `{type: 'listening', origin}` once it serves; when all N have, the primary asks
 * the first one to log the ready line (`{type: 'announce'}`), so it is printed once and as before.
 */
import cluster, { type Worker } from 'node:cluster';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { prepareDataDir } from '../controller.ts';
import { openDatabase, closeDatabase } from '../store/database.ts';
import { clearLiveRoutersOf } from '../fabric/live-routers.ts';
import { isBusEnvelope } from '../fabric/bus.ts';
import { abandonIntegrityRun } from '../resources/database/database-ops.ts';
import { printAdminCredentials } from './messages.ts';

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
  const db = openDatabase(join(config.dataDir, 'portcullis.db'));
  try {
    const { admin } = await prepareDataDir(db, config);
    printAdminCredentials(admin);
  } catch (err) {
    closeDatabase(db);
    throw err;
  }

  const states = new Map<Worker, WorkerState>();
  let announced = false;
  let stopping = false;
  let exitCode = 0;

  const fork = () => {
    const worker = cluster.fork();
    states.set(worker, { startedAt: Date.now(), listening: false });
    worker.on('message', (message: { type?: string; origin?: string }) => {
      if (isBusEnvelope(message)) {
        // Fabric messages between workers (src/fabric/bus.ts): handed to the worker of that name, if it lives.
        for (const [other, s] of states) if (s.origin === message.to && !other.isDead()) other.send(message);
        return;
      }
      const state = states.get(worker);
      if (!state || message?.type !== 'listening') return;
      state.listening = true;
      state.origin = message.origin;
      if (!announced && states.size === config.workers && [...states.values()].every((s) => s.listening)) {
        announced = true;
        worker.send({ type: 'announce', workers: config.workers });
      }
    });
  };

  const finish = () => {
    if (states.size > 0) return;
    closeDatabase(db);
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
    if (state?.origin) {
      try {
        abandonIntegrityRun(db, state.origin);
        // Its routers' connections died with it; they reconnect to the other workers.
        clearLiveRoutersOf(db, state.origin);
      } catch {
        // The store may be busy; the next start resets both anyway.
      }
    }
    if (stopping) return finish();
    if (!announced) {
      // A worker that can not start (port taken, bad data dir...) would fail again: give up.
      process.stderr.write(`worker ${worker.id} exited during start (code ${code ?? signal})\n`);
      return stopAll(1);
    }
    if (code === 0 && signal === null) return stopAll(0); // it was told to stop (a signal to the process group)
    process.stderr.write(`worker ${worker.id} died (${signal ?? `code ${code}`}); starting a new one\n`);
    const quick = state !== undefined && Date.now() - state.startedAt < QUICK_DEATH_MS;
    if (quick) setTimeout(() => stopping || fork(), RESTART_PAUSE_MS);
    else fork();
  });

  process.on('SIGTERM', () => stopAll(0));
  process.on('SIGINT', () => stopAll(0));
  for (let i = 0; i < config.workers; i++) fork();
}
