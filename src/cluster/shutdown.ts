/**
 * Stopping a serving process: the controller is stopped once, whatever asks first (a signal, or the
 * primary going away for a worker), then the process exits 0, or 1 when stopping failed.
 */
export function stopOnce(controller: { stop(): Promise<void> }, announce: (reason: string) => void): (reason: string) => void {
  let stopping = false;
  return (reason: string) => {
    if (stopping) return;
    stopping = true;
    announce(reason);
    controller
      .stop()
      .then(() => process.exit(0))
      .catch((err) => {
        console.error(err);
        process.exit(1);
      });
  };
}

/** Stops on SIGTERM and SIGINT; returns the stop function for other triggers. */
export function stopOnSignals(controller: { stop(): Promise<void> }, announce: (reason: string) => void): (reason: string) => void {
  const shutdown = stopOnce(controller, announce);
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  return shutdown;
}
