/**
 * The `ctrls` claim of router enrollment JWTs names every live controller of the network, in the membership's
 * order, as it is when the JWT is signed (an enrolling router saves them as its controller endpoints).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { createRouterEnrollments } from '../../../src/resources/routers/router-enrollment.ts';
import type { ControllerMember } from '../../../src/cluster/membership.ts';

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pki = { serverKey: privateKey, serverCertFingerprint: 'ab'.repeat(20) };
const clock = { now: () => new Date('2026-01-01T00:00:00Z') };

function claimsOf(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}

function member(id: string, ctrlAddress: string): ControllerMember {
  return { id, ctrlAddress, certPem: '', fingerprint: '' };
}

describe('router enrollment ctrls', () => {
  it('ok/names every live controller, read again at each signing', async () => {
    let live: ControllerMember[] = [member('a', 'tls:a.test:1280')];
    const enrollments = createRouterEnrollments({ pki, issuer: 'https://a.test:1280', membership: { live: () => live }, clock });
    assert.deepEqual(claimsOf((await enrollments.prepare('r1', 'erott')).jwt).ctrls, ['tls:a.test:1280']);
    live = [member('a', 'tls:a.test:1280'), member('b', 'tls:b.test:1443')];
    const claims = claimsOf((await enrollments.prepare('r1', 'trott')).jwt);
    assert.deepEqual(claims.ctrls, ['tls:a.test:1280', 'tls:b.test:1443']);
    assert.deepEqual(Object.keys(claims), ['iss', 'sub', 'aud', 'exp', 'jti', 'em', 'ctrls']);
  });
});
