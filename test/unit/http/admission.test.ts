/**
 * The adaptive limiter: a window of requests admitted at once, shrinking when admitted requests are slow and
 * growing while fast ones fill it, between its bounds; off at 0; request classes by method and route.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AdaptiveLimiter, admissionClass } from '../../../src/http/admission.ts';

describe('AdaptiveLimiter', () => {
  it('admits up to its window, refuses the rest, and admits again after a release', () => {
    const limiter = new AdaptiveLimiter({ min: 2, max: 2, targetMs: 100 });
    const a = limiter.acquire();
    const b = limiter.acquire();
    assert.ok(a && b);
    assert.equal(limiter.acquire(), undefined);
    assert.equal(limiter.state().rejected, 1);
    a!();
    a!();
    assert.equal(limiter.state().inFlight, 1, 'a release counts once');
    assert.ok(limiter.acquire());
  });

  it('shrinks by a quarter on slow requests, down to min, and grows by one on fast ones at capacity, up to max', () => {
    let now = 0;
    const clock = () => now;
    const limiter = new AdaptiveLimiter({ min: 5, max: 30, targetMs: 1000 });
    assert.equal(limiter.state().window, 20);
    const slow = limiter.acquire(clock)!;
    now = 2000;
    slow();
    assert.equal(limiter.state().window, 15);
    for (let i = 0; i < 10; i++) {
      const r = limiter.acquire(clock)!;
      now += 5000;
      r();
    }
    assert.equal(limiter.state().window, 5, 'never below min');
    // Fill the window with fast requests: each release at capacity grows it by one.
    for (let round = 0; round < 40; round++) {
      const held = Array.from({ length: limiter.state().window }, () => limiter.acquire(clock)!);
      assert.equal(limiter.acquire(clock), undefined);
      now += 10;
      held[0]!();
      for (const r of held.slice(1)) r();
    }
    assert.equal(limiter.state().window, 30, 'never above max');
  });

  it('does not grow while it is not used up', () => {
    const limiter = new AdaptiveLimiter({ min: 5, max: 50, targetMs: 1000 });
    const before = limiter.state().window;
    for (let i = 0; i < 100; i++) limiter.acquire(() => 0)!(0);
    assert.equal(limiter.state().window, before);
  });

  it('admits everything when off', () => {
    const limiter = new AdaptiveLimiter({ min: 0, max: 0, targetMs: 1000 });
    for (let i = 0; i < 1000; i++) assert.ok(limiter.acquire());
  });
});

describe('admissionClass', () => {
  it('tells authentication from other state changes and reads', () => {
    assert.equal(admissionClass('POST', '/edge/client/v1/authenticate'), 'auth');
    assert.equal(admissionClass('POST', '/edge/management/v1/authenticate/mfa'), 'auth');
    assert.equal(admissionClass('POST', '/authenticate'), 'auth');
    assert.equal(admissionClass('POST', '/edge/client/v1/enroll/extend/router'), 'auth');
    assert.equal(admissionClass('POST', '/edge/management/v1/identities'), 'write');
    assert.equal(admissionClass('DELETE', '/edge/management/v1/identities/:id'), 'write');
    assert.equal(admissionClass('PATCH', '/edge/management/v1/services/:id'), 'write');
    assert.equal(admissionClass('GET', '/edge/client/v1/services'), undefined);
  });
});
