/**
 * `PUT /identities/{id}/trace` (upstream model §8.4, seeds management §2.13): data-flow tracing for an
 * identity, held in memory. Covers enabling with Go duration strings, a given or generated trace id,
 * channels, disabling, the null meta, each bad body, unknown ids and permissions.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, type TestController } from '../../support/controller.ts';
import { createIdentity, createUserWithPassword } from '../../support/factories.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';
import { assertDecodeError, assertError, assertFieldError } from '../../support/assertions.ts';

const tc: TestController = await startTestController();
const identityId = await createIdentity(tc.mgmt);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Upstream answers the trace update with `"meta": null`. */
const NULL_META = { allowNullAt: ['/meta'] };

async function trace(body: unknown, id = identityId) {
  return tc.mgmt.put(`/identities/${id}/trace`, body);
}

function assertUntil(until: string, before: number, after: number, durationMs: number): void {
  const at = Date.parse(until);
  assert.ok(at >= before + durationMs && at <= after + durationMs, `until ${until} is not about ${durationMs} ms from now`);
}

describe('PUT /identities/{id}/trace', () => {
  it('enables tracing for a Go duration and generates a trace id', async () => {
    const before = Date.now();
    const res = await trace({ enabled: true, duration: '10m' });
    const after = Date.now();
    assert.equal(res.status, 200, res.text);
    assertMatchesReference('management', 'PUT', '/identities/{id}/trace', 200, res.body, NULL_META);
    assert.equal(res.body.meta, null);
    assert.deepEqual(Object.keys(res.body.data), ['enabled', 'traceId', 'until']);
    assert.equal(res.body.data.enabled, true);
    assert.match(res.body.data.traceId, UUID);
    assertUntil(res.body.data.until, before, after, 10 * 60_000);
  });

  it('keeps a given trace id and accepts compound and fractional durations and channels', async () => {
    for (const [duration, ms] of [['1h30m', 90 * 60_000], ['1.5h', 90 * 60_000], ['90s', 90_000], ['250ms', 250], ['+2m', 120_000]] as const) {
      const before = Date.now();
      const res = await trace({ enabled: true, duration, traceId: 'my-trace', channels: ['establishPath', 'unknown'] });
      const after = Date.now();
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.traceId, 'my-trace');
      assertUntil(res.body.data.until, before, after, ms);
    }
    const all = await trace({ enabled: true, duration: '1m', traceId: '', channels: ['all'] });
    assert.equal(all.status, 200, all.text);
    assert.match(all.body.data.traceId, UUID, 'an empty trace id is replaced');
  });

  it('disables tracing: only the zero "until" is sent', async () => {
    assert.equal((await trace({ enabled: true, duration: '5m' })).status, 200);
    for (const body of [{ enabled: false }, {}, { enabled: false, duration: 'not checked' }]) {
      const res = await trace(body);
      assert.equal(res.status, 200, res.text);
      assertMatchesReference('management', 'PUT', '/identities/{id}/trace', 200, res.body, NULL_META);
      assert.deepEqual(res.body, { data: { until: '0001-01-01T00:00:00.000Z' }, meta: null });
    }
  });

  it('refuses a duration Go cannot parse, with Go\'s reason', async () => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, 'time: invalid duration ""'],
      ['', 'time: invalid duration ""'],
      ['ten minutes', 'time: invalid duration "ten minutes"'],
      ['10', 'time: missing unit in duration "10"'],
      ['10x', 'time: unknown unit "x" in duration "10x"'],
      ['.m', 'time: invalid duration ".m"'],
    ];
    for (const [duration, reason] of cases) {
      const res = await trace({ enabled: true, ...(duration === undefined ? {} : { duration }) });
      assertFieldError(res, 'duration');
      assert.equal(res.body.error.cause.reason, reason, res.text);
    }
  });

  it('refuses bodies of the wrong shape', async () => {
    assertDecodeError(await trace({ enabled: 'yes', duration: '1m' }), 'enabled');
    assertDecodeError(await trace({ enabled: true, duration: 60 }), 'duration');
    assertDecodeError(await trace({ enabled: true, duration: '1m', channels: 'all' }), 'channels');
    const wrongType = await tc.mgmt.put(`/identities/${identityId}/trace`, undefined, { rawBody: 'enabled', contentType: 'text/plain' });
    assert.equal(wrongType.status, 415, wrongType.text);
  });

  it('answers 404 for an unknown identity', async () => {
    assertError(await trace({ enabled: true, duration: '1m' }, 'no-such-identity'), 404, 'NOT_FOUND');
    assertError(await trace({ enabled: false }, 'no-such-identity'), 404, 'NOT_FOUND');
  });

  it('needs a session and admin or identity update rights', async () => {
    const anonymous = await tc.http.put(`/edge/management/v1/identities/${identityId}/trace`, { enabled: false });
    assertError(anonymous, 401, 'UNAUTHORIZED');
    for (const permissions of [[], ['admin_readonly'], ['identity.read'], ['ops']]) {
      const caller = await createUserWithPassword(tc, { permissions });
      assertError(await tc.mgmt.as({ token: caller.token }).put(`/identities/${identityId}/trace`, { enabled: false }), 401, 'UNAUTHORIZED');
    }
    const updater = await createUserWithPassword(tc, { permissions: ['identity.update'] });
    const res = await tc.mgmt.as({ token: updater.token }).put(`/identities/${identityId}/trace`, { enabled: true, duration: '1m' });
    assert.equal(res.status, 200, res.text);
  });

  it('is not offered by the client API', async () => {
    const res = await tc.client.put(`/identities/${identityId}/trace`, { enabled: false });
    assert.equal(res.status, 404, res.text);
  });
});
