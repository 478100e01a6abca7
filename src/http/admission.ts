/**
 * Admission control: under a login flood or a write flood, the excess is answered at once with 429 instead of
 * queueing until everything times out, so that authenticated reads keep their latency.
 *
 * Two adaptive limiters per process, as upstream has an auth rate limiter and a limiter for state changes:
 * - authentication requests (`POST .../authenticate`, its MFA step and certificate extension) — 429
 *   `RATE_LIMITED` when full;
 * - every other state-changing request (POST, PUT, PATCH, DELETE) — 429 `SERVER_TOO_MANY_REQUESTS` when full.
 *
 * Each admits at most `window` requests at once. The window adapts to how long admitted requests take: a
 * request slower than the target (the queue behind the work is growing) shrinks it by a quarter, down to
 * `min`; requests that finish in under half the target while the window is in use grow it by one, up to `max`.
 * Reads are never limited here. A rejected request costs no work and changes nothing, so a client may retry.
 */

export interface LimiterSettings {
  /** Largest window; 0 turns the limiter off. */
  max: number;
  min: number;
  /** Latency above which the window shrinks. */
  targetMs: number;
}

export class AdaptiveLimiter {
  private inFlight = 0;
  private window: number;
  rejected = 0;

  constructor(private readonly settings: LimiterSettings) {
    this.window = settings.max > 0 ? Math.max(settings.min, Math.min(settings.max, settings.min * 4)) : 0;
  }

  get enabled(): boolean {
    return this.settings.max > 0;
  }

  /** The current window and use, for logs and tests. */
  state(): { window: number; inFlight: number; rejected: number } {
    return { window: this.window, inFlight: this.inFlight, rejected: this.rejected };
  }

  /** Admits one request (returns its release function) or refuses it (undefined). */
  acquire(now: () => number = Date.now): ((doneAt?: number) => void) | undefined {
    if (!this.enabled) return () => undefined;
    if (this.inFlight >= this.window) {
      this.rejected++;
      return undefined;
    }
    this.inFlight++;
    const started = now();
    let released = false;
    return (doneAt = now()) => {
      if (released) return;
      released = true;
      const busy = this.inFlight >= this.window;
      this.inFlight--;
      const took = doneAt - started;
      if (took > this.settings.targetMs) this.window = Math.max(this.settings.min, Math.floor(this.window * 0.75));
      else if (busy && took < this.settings.targetMs / 2) this.window = Math.min(this.settings.max, this.window + 1);
    };
  }
}

export interface AdmissionSettings {
  auth: LimiterSettings;
  writes: LimiterSettings;
}

/** Defaults: upstream's auth limiter bounds (5..250); writes 10..250; both aim at answers within a second. */
export function admissionSettings(authMax: number, writeMax: number): AdmissionSettings {
  return {
    auth: { max: authMax, min: Math.min(5, authMax), targetMs: 1000 },
    writes: { max: writeMax, min: Math.min(10, writeMax), targetMs: 1000 },
  };
}

const AUTH_PATH = /\/authenticate(\/mfa)?$|\/enroll\/extend\/router$|\/current-identity\/authenticators\/[^/]+\/extend(-verify)?$|^\/oidc\/(login\/|oauth\/token$)/;
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Which limiter a request falls under, by method and route path. */
export function admissionClass(method: string, routePath: string): 'auth' | 'write' | undefined {
  if (method === 'POST' && AUTH_PATH.test(routePath)) return 'auth';
  if (WRITE_METHODS.has(method)) return 'write';
  return undefined;
}
