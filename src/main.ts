/**
 * Process entry: flags and environment → Config → startController(). Prints the admin credentials when
 * this start created the admin, logs one line when ready, and shuts down cleanly on SIGTERM/SIGINT
 * (in-flight requests finish, the database is closed).
 */
import { CommanderError } from 'commander';
import { loadConfig, type Config } from './config.ts';
import { startController } from './controller.ts';

function readConfig(): Config {
  try {
    return loadConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    throw err;
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const controller = await startController(config);
  const { admin } = controller;
  if (admin.created) {
    const password = admin.generatedPassword ?? '(as given with --admin-password)';
    process.stdout.write(`Default admin created.\n  username: ${admin.username}\n  password: ${password}\n`);
  }
  controller.app.log.info(
    { address: config.address, port: controller.port, dataDir: config.dataDir },
    `Portcullis ready on https://${config.advertise}:${controller.port}`,
  );
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    controller.app.log.info({ signal }, 'shutting down');
    controller
      .stop()
      .then(() => process.exit(0))
      .catch((err) => {
        console.error(err);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
