/**
 * A clock for the controller under test (`startTestController({ start: { clock } })`) that tests move instead of sleeping
 * past a deadline. `frozen` stands still between moves; otherwise it runs with real time plus the moves.
 */
import type { Clock } from '../../src/resources/entity-service.ts';

export interface ManualClock extends Clock {
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void;
}

export function manualClock(opts: { frozen?: boolean } = {}): ManualClock {
  const frozenAt = Date.now();
  let offset = 0;
  return {
    now: () => new Date((opts.frozen ? frozenAt : Date.now()) + offset),
    advance(ms) {
      offset += ms;
    },
  };
}
