/**
 * The cluster key wrap and the session-token seal (both AES-256-GCM, src/pki/aead.ts): what one side seals the
 * other opens only with the same key and the same binding (name and network; session id), and damaged text opens
 * to nothing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { keyWrap, MIN_SECRET_LENGTH } from '../../../src/pki/key-wrap.ts';
import { tokenSeal } from '../../../src/auth/token-seal.ts';

const secret = randomBytes(32).toString('base64');

describe('cluster key wrap', () => {
  it('opens what it wrapped, under the same secret, network and name only', () => {
    const wrapped = keyWrap(secret, 'net-1').wrap('intermediate-ca-key', 'PRIVATE');
    assert.equal(keyWrap(secret, 'net-1').unwrap('intermediate-ca-key', wrapped), 'PRIVATE');
    assert.equal(keyWrap(randomBytes(32).toString('base64'), 'net-1').unwrap('intermediate-ca-key', wrapped), undefined, 'another secret');
    assert.equal(keyWrap(secret, 'net-2').unwrap('intermediate-ca-key', wrapped), undefined, 'another network');
    assert.equal(keyWrap(secret, 'net-1').unwrap('api-session-seal-key', wrapped), undefined, 'another name');
    const bytes = Buffer.from(wrapped, 'base64');
    bytes[bytes.length - 20]! ^= 1;
    assert.equal(keyWrap(secret, 'net-1').unwrap('intermediate-ca-key', bytes.toString('base64')), undefined, 'damaged');
    assert.equal(keyWrap(secret, 'net-1').unwrap('intermediate-ca-key', 'AAAA'), undefined, 'too short');
  });

  it('wraps the same plaintext differently each time (a fresh nonce)', () => {
    const wrap = keyWrap(secret, 'net-1');
    assert.notEqual(wrap.wrap('k', 'same'), wrap.wrap('k', 'same'));
  });

  it('refuses a short secret', () => {
    assert.throws(() => keyWrap('x'.repeat(MIN_SECRET_LENGTH - 1), 'net-1'), /at least 32 characters/);
  });
});

describe('session token seal', () => {
  it('opens a sealed token for its own session and key only', () => {
    const key = randomBytes(32);
    const sealed = tokenSeal(key).seal('token-1', 'session-1');
    assert.equal(tokenSeal(key).open(sealed, 'session-1'), 'token-1');
    assert.equal(tokenSeal(key).open(sealed, 'session-2'), undefined);
    assert.equal(tokenSeal(randomBytes(32)).open(sealed, 'session-1'), undefined);
    assert.throws(() => tokenSeal(randomBytes(16)), /32 bytes/);
  });
});
