/**
 * Data-flow tracing per identity (`PUT /identities/{id}/trace`, upstream model §8.4): held only in this
 * controller's memory, each trace ending at its `until`. Expired traces are dropped when next looked at.
 * With no data plane nothing emits trace events yet; the state is kept so the operation behaves as
 * upstream's and so a future router link can read it.
 */
import { randomUUID } from 'node:crypto';
import { fieldError } from '../../errors.ts';
import { systemClock, type Clock } from '../entity-service.ts';
import { DurationError, parseGoDuration } from './go-duration.ts';

export interface TraceSpec {
  enabled?: boolean;
  duration?: string;
  traceId?: string;
  channels?: string[];
}

export interface IdentityTrace {
  traceId: string;
  until: Date;
  channels: string[];
}

/** The channels upstream knows; `all` (or none given) selects every one. */
export const traceChannels = ['selectPath', 'establishPath'] as const;

/** What upstream renders for a zero time. */
const zeroTime = '0001-01-01T00:00:00.000Z';

export function createIdentityTraces(clock: Clock = systemClock) {
  const traces = new Map<string, IdentityTrace>();

  function get(identityId: string): IdentityTrace | undefined {
    const trace = traces.get(identityId);
    if (trace && trace.until.getTime() <= clock.now().getTime()) {
      traces.delete(identityId);
      return undefined;
    }
    return trace;
  }

  /** Applies a trace spec; answers the traceDetail upstream sends back. */
  function update(identityId: string, spec: TraceSpec): Record<string, unknown> {
    if (!spec.enabled) {
      traces.delete(identityId);
      return { until: zeroTime };
    }
    const duration = spec.duration ?? '';
    let ms: number;
    try {
      ms = parseGoDuration(duration);
    } catch (error) {
      if (error instanceof DurationError) throw fieldError('duration', error.message, duration);
      throw error;
    }
    const requested = spec.channels ?? [];
    const channels =
      requested.length === 0 || requested.includes('all')
        ? [...traceChannels]
        : traceChannels.filter((channel) => requested.includes(channel));
    const trace: IdentityTrace = {
      traceId: spec.traceId ? spec.traceId : randomUUID(),
      until: new Date(clock.now().getTime() + ms),
      channels,
    };
    traces.set(identityId, trace);
    return { enabled: true, traceId: trace.traceId, until: trace.until.toISOString() };
  }

  return { get, update };
}

export type IdentityTraces = ReturnType<typeof createIdentityTraces>;
