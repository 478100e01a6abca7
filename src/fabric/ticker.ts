/** Periodic work of the fabric that may also be asked to run sooner. */

export interface Ticker {
  /** Runs the work as soon as it may: now, at `minGapMs` after the last run started, or after the run in flight. */
  wake(): void;
  stop(): void;
}

/**
 * Runs `run` every `intervalMs`, never two at once (a tick that finds a run in flight is skipped), and sooner when woken:
 * runs woken while one is in flight become one run after it, and runs start at least `minGapMs` apart.
 */
export function everyInterval(intervalMs: number, run: () => Promise<void>, minGapMs = 0): Ticker {
  let running = false;
  let pending = false;
  let stopped = false;
  let lastStart = 0;
  let soon: NodeJS.Timeout | undefined;
  const start = (): void => {
    if (stopped) return;
    running = true;
    lastStart = Date.now();
    run().then(done, done);
  };
  const done = (): void => {
    running = false;
    if (pending) {
      pending = false;
      wake();
    }
  };
  const wake = (): void => {
    if (stopped || soon) return;
    if (running) {
      pending = true;
      return;
    }
    const wait = lastStart + minGapMs - Date.now();
    if (wait <= 0) return start();
    soon = setTimeout(() => {
      soon = undefined;
      if (running) pending = true;
      else start();
    }, wait);
    soon.unref();
  };
  const timer = setInterval(() => {
    if (!running && !soon) start();
  }, intervalMs);
  timer.unref();
  return {
    wake,
    stop() {
      stopped = true;
      clearInterval(timer);
      if (soon) clearTimeout(soon);
    },
  };
}
