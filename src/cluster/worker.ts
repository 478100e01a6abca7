/**
 * One cluster worker: a full controller (`startController` without the first-start work, which the primary
 * did) serving the shared listener, with its own access index kept current through the change feed. It
 * tells the primary when it serves, logs the ready line when asked to, and stops cleanly on SIGTERM/SIGINT
 * or when the primary goes away.
 */
import cluster from 'node:cluster';
import type { Config } from '../config.ts';
import { startController } from '../controller.ts';
import { newOrigin } from './change-feed.ts';
import { stopOnSignals } from './shutdown.ts';
import { workerBus } from '../fabric/bus.ts';

export async function runWorker(config: Config): Promise<void> {
  const worker = cluster.worker!;
  const origin = newOrigin();
  const controller = await startController(config, { firstStart: false, workerId: String(worker.id), origin, bus: workerBus(origin, { send: (m) => process.send!(m), on: (event, listener) => process.on(event, listener) }) });
  const shutdown = stopOnSignals(controller, (signal) => controller.app.log.debug({ signal, worker: worker.id }, 'worker shutting down'));
  worker.on('disconnect', () => shutdown('primary gone'));
  worker.on('message', (message: { type?: string; workers?: number }) => {
    if (message?.type !== 'announce') return;
    controller.app.log.info(
      { address: config.address, port: controller.port, dataDir: config.dataDir, workers: message.workers },
      `Portcullis ready on https://${config.advertise}:${controller.port}`,
    );
  });
  worker.send({ type: 'listening', origin, port: controller.port });
}
