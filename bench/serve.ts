/**
 * Child process: starts the controller on 127.0.0.1 and prints one ready line,
 * `READY {"port":N,"caBundlePem":"..."}`, on stdout. Stops on SIGTERM/SIGINT.
 * Usage: node --import tsx bench/serve.ts <dataDir> <port|0>
 */
import { startController } from '../src/controller.ts';
import { loadConfig } from '../src/config.ts';
import { BENCH_ADMIN_PASSWORD } from './datasets/identities.ts';

const [dataDir, port = '0'] = process.argv.slice(2);
if (!dataDir) throw new Error('usage: serve.ts <dataDir> <port>');

const started = performance.now();
const controller = await startController(
  loadConfig(['--data-dir', dataDir, '--address', '127.0.0.1', '--port', port, '--admin-password', BENCH_ADMIN_PASSWORD, '--log-level', 'silent'], {}),
);
const stop = () => {
  controller.stop().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
const startMs = performance.now() - started;
const rssMb = process.memoryUsage().rss / 1024 / 1024;
process.stdout.write(`READY ${JSON.stringify({ port: controller.port, caBundlePem: controller.pki.caBundlePem, startMs, rssMb })}\n`);
