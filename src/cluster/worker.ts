/**
 * One cluster worker: a full controller serving the shared listener, with its own access index kept current
 * through the change feed. The first worker of a start also does the once-per-start work and prints the admin
 * credentials; the others wait for it before they open the store (src/cluster/primary.ts). A worker tells the
 * primary when it serves, logs the ready line when asked to, drops the store rows a dead worker owned when
 * asked to, and stops cleanly on SIGTERM/SIGINT or when the primary goes away.
 */
import cluster from 'node:cluster';
import type { Config } from '../config.ts';
import { startController } from '../controller.ts';
import { newOrigin } from './change-feed.ts';
import { printAdminCredentials, START_ROLE_ENV, type PrimaryMessage, type WorkerMessage } from './messages.ts';
import { stopOnSignals } from './shutdown.ts';
import { workerBus } from '../fabric/bus.ts';
import { clearLiveRoutersOf } from '../fabric/live-routers.ts';
import { abandonIntegrityRun } from '../resources/database/database-ops.ts';

const send = (message: WorkerMessage): void => {
  process.send!(message);
};

/** Resolves on the primary's `prepared` (the first worker finished the once-per-start work). */
function preparedByFirst(): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: PrimaryMessage) => {
      if (message?.type !== 'prepared') return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
    send({ type: 'waiting' });
  });
}

export async function runWorker(config: Config): Promise<void> {
  const worker = cluster.worker!;
  const role = process.env[START_ROLE_ENV];
  const origin = newOrigin();
  if (role === 'after-first') await preparedByFirst();
  const controller = await startController(config, {
    firstStart: role === 'first',
    onPrepared: () => send({ type: 'prepared' }),
    workerId: String(worker.id),
    origin,
    bus: workerBus(origin, { send: (m) => process.send!(m), on: (event, listener) => process.on(event, listener) }),
  });
  if (role === 'first') printAdminCredentials(controller.admin);
  const shutdown = stopOnSignals(controller, (signal) => controller.app.log.debug({ signal, worker: worker.id }, 'worker shutting down'));
  worker.on('disconnect', () => shutdown('primary gone'));
  worker.on('message', (message: PrimaryMessage) => {
    if (message?.type === 'announce') {
      controller.app.log.info(
        { address: config.address, port: controller.port, dataDir: config.dataDir, workers: message.workers },
        `Portcullis ready on https://${config.advertise}:${controller.port}`,
      );
    } else if (message?.type === 'worker-gone') {
      const gone = message.origin;
      void (async () => {
        try {
          await abandonIntegrityRun(controller.store, gone);
          await clearLiveRoutersOf(controller.store, gone);
        } catch (err) {
          // The store may be busy; the next start resets both anyway.
          controller.app.log.warn({ err, worker: gone }, 'could not drop the state of a dead worker');
        }
        send({ type: 'gone-dropped', origin: gone });
      })();
    }
  });
  send({ type: 'listening', origin, port: controller.port });
}
