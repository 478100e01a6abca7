import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { configurePasswordHashing, hashPassword, passwordHashingLoad, verifyPassword } from '../../../src/auth/password-hash.ts';

describe('password hashing', () => {
  it('verifies the right password and refuses a wrong one or a broken hash', async () => {
    const stored = await hashPassword('correct horse');
    assert.match(stored, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.equal(await verifyPassword(stored, 'correct horse'), true);
    assert.equal(await verifyPassword(stored, 'wrong horse'), false);
    assert.equal(await verifyPassword('not a hash', 'correct horse'), false);
  });

  it('computes at most `concurrency` hashes at once; the others wait and all finish', async () => {
    configurePasswordHashing({ concurrency: 1 });
    const stored = await hashPassword('pw');
    let highest = 0;
    const sample = setInterval(() => (highest = Math.max(highest, passwordHashingLoad().active)), 1);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => verifyPassword(stored, i % 2 ? 'pw' : 'nope')));
    clearInterval(sample);
    assert.deepEqual(results, [false, true, false, true, false, true]);
    assert.equal(highest, 1);
    assert.deepEqual(passwordHashingLoad(), { active: 0, waiting: 0, concurrency: 1 });

    configurePasswordHashing({ concurrency: 3 });
    const burst = Array.from({ length: 7 }, () => verifyPassword(stored, 'pw'));
    assert.equal(passwordHashingLoad().active, 3);
    assert.equal(passwordHashingLoad().waiting, 4);
    assert.deepEqual(await Promise.all(burst), Array(7).fill(true));
    assert.deepEqual(passwordHashingLoad(), { active: 0, waiting: 0, concurrency: 3 });
  });
});
