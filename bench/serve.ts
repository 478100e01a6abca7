/**
 * Child process: starts the controller on 127.0.0.1 and prints one ready line,
 * `READY {"port":N,"caBundlePem":"..."}`, on stdout. Stops on SIGTERM/SIGINT.
 * Usage: node --import tsx bench/serve.ts <dataDir> <port|0> [workers] [advertise] [--flag value ...]
 * `workers` (or PORTCULLIS_WORKERS; default 1) > 1 serves with that many cluster worker processes sharing the
 * listener, as `--workers` does (the primary prepares the data dir, the workers serve; rssMb is the primary's).
 * `advertise` (default: the controller's default, localhost) is passed as `--advertise`: the host named in
 * enrollment JWTs (router control endpoint, SDK API URL) and covered by the server certificate. Arguments from the
 * first `--` flag on are passed to the controller as they are (e.g. `--auth-limit 0 --write-limit 0`, or
 * `--database-url postgres://…` for a PostgreSQL store).
 */
import cluster from 'node:cluster';
import { prepareDataDir, startController } from '../src/controller.ts';
import { loadConfig } from '../src/config.ts';
import { openStore } from '../src/store/open-store.ts';
import { BENCH_ADMIN_PASSWORD } from './datasets/identities.ts';

const argv = process.argv.slice(2);
const firstFlag = argv.findIndex((a) => a.startsWith('--'));
const flags = firstFlag < 0 ? [] : argv.splice(firstFlag);
const [dataDir, port = '0', workersArg = process.env.PORTCULLIS_WORKERS ?? '1', advertise] = argv;
if (!dataDir) throw new Error('usage: serve.ts <dataDir> <port> [workers] [advertise]');
const workers = Number(workersArg);
if (!Number.isInteger(workers) || workers < 1) throw new Error('workers must be a positive integer');

const config = loadConfig(
  [
    ...['--data-dir', dataDir, '--address', '127.0.0.1', '--port', port, '--admin-password', BENCH_ADMIN_PASSWORD, '--log-level', 'silent', '--workers', String(workers)],
    ...(advertise ? ['--advertise', advertise] : []),
    ...flags,
  ],
  {},
);
const started = performance.now();

if (workers === 1) {
  const controller = await startController(config);
  const stop = () => {
    void controller.stop().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const startMs = performance.now() - started;
  const rssMb = process.memoryUsage().rss / 1024 / 1024;
  process.stdout.write(`READY ${JSON.stringify({ port: controller.port, caBundlePem: controller.pki.caBundlePem, startMs, rssMb })}\n`);
} else if (cluster.isWorker) {
  const controller = await startController(config, { firstStart: false, workerId: String(cluster.worker!.id) });
  const stop = () => {
    void controller.stop().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  cluster.worker!.on('disconnect', stop);
  process.send!({ type: 'listening', port: controller.port });
} else {
  const store = await openStore(config);
  const { pki, network } = await prepareDataDir(store, config);
  await network.session?.close();
  await store.close();
  let listening = 0;
  let boundPort = 0;
  for (let i = 0; i < workers; i++) {
    cluster.fork().on('message', (m: { type?: string; port?: number }) => {
      if (m?.type !== 'listening') return;
      boundPort = m.port ?? boundPort;
      if (++listening !== workers) return;
      const startMs = performance.now() - started;
      const rssMb = process.memoryUsage().rss / 1024 / 1024;
      process.stdout.write(`READY ${JSON.stringify({ port: boundPort, caBundlePem: pki.caBundlePem, startMs, rssMb, workers })}\n`);
    });
  }
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
  };
  cluster.on('exit', () => {
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
    if (!stopping) stop();
  });
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
