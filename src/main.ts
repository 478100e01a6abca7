/**
 * Process entry: flags and environment → Config → startController(). Prints the admin credentials when
 * this start created the admin, logs one line when ready, and shuts down cleanly on SIGTERM/SIGINT
 * (in-flight requests finish, the database is closed).
 *
 * With `--workers N` (default: one per core) this process becomes the cluster primary and N worker
 * processes serve the listener (src/cluster/); `--workers 1` serves from this process alone.
 */
import cluster from 'node:cluster';
import { createServer, type AddressInfo } from 'node:net';
import { CommanderError } from 'commander';
import { loadConfig, type Config } from './config.ts';

// Each role loads only its own code: the cluster primary serves nothing, so it never loads the controller
// (that would cost it the memory of a whole worker for as long as it runs).

function readConfig(): Config {
  try {
    return loadConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    throw err;
  }
}

async function single(config: Config): Promise<void> {
  const [{ startController }, { printAdminCredentials }, { stopOnSignals }] = await Promise.all([
    import('./controller.ts'),
    import('./cluster/messages.ts'),
    import('./cluster/shutdown.ts'),
  ]);
  const controller = await startController(config);
  printAdminCredentials(controller.admin);
  controller.app.log.info(
    { address: config.address, port: controller.port, dataDir: config.dataDir },
    `Portcullis ready on https://${config.advertise}:${controller.port}`,
  );
  stopOnSignals(controller, (signal) => controller.app.log.info({ signal }, 'shutting down'));
}

/**
 * `--port 0` asks for any free port: it is chosen here, before anything names the port (enrollment JWT
 * issuers, the control endpoint routers are given), and workers are started with it.
 */
async function resolvePort(config: Config): Promise<Config> {
  if (config.port !== 0) return config;
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, config.address, resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  if (cluster.isPrimary) cluster.setupPrimary({ args: [...process.argv.slice(2), '--port', String(port)] });
  return { ...config, port };
}

async function main(): Promise<void> {
  if (process.argv[2] === 'copy-to-postgres') {
    return (await import('./store/copy-command.ts')).copyToPostgres(process.argv.slice(3));
  }
  const config = readConfig();
  if (cluster.isWorker) return (await import('./cluster/worker.ts')).runWorker(config);
  const resolved = await resolvePort(config);
  if (resolved.workers > 1) return (await import('./cluster/primary.ts')).runPrimary(resolved);
  return single(resolved);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
