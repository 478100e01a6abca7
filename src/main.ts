/**
 * Process entry: flags and environment → Config → startController(). Prints the admin credentials when
 * this start created the admin, logs one line when ready, and shuts down cleanly on SIGTERM/SIGINT
 * (in-flight requests finish, the database is closed).
 *
 * With `--workers N` (default: one per core) this process becomes the cluster primary and N worker
 * processes serve the listener (src/cluster/); `--workers 1` serves from this process alone.
 */
import cluster from 'node:cluster';
import { CommanderError } from 'commander';
import { loadConfig, type Config } from './config.ts';
import { startController } from './controller.ts';
import { printAdminCredentials } from './cluster/messages.ts';
import { runPrimary } from './cluster/primary.ts';
import { runWorker } from './cluster/worker.ts';
import { stopOnSignals } from './cluster/shutdown.ts';

function readConfig(): Config {
  try {
    return loadConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    throw err;
  }
}

async function single(config: Config): Promise<void> {
  const controller = await startController(config);
  printAdminCredentials(controller.admin);
  controller.app.log.info(
    { address: config.address, port: controller.port, dataDir: config.dataDir },
    `Portcullis ready on https://${config.advertise}:${controller.port}`,
  );
  stopOnSignals(controller, (signal) => controller.app.log.info({ signal }, 'shutting down'));
}

async function main(): Promise<void> {
  const config = readConfig();
  if (cluster.isWorker) return runWorker(config);
  if (config.workers > 1) return runPrimary(config);
  return single(config);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
