/** The node flags the cluster primary gives its workers (src/cluster/primary.ts workerExecArgv). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { workerExecArgv } from '../../../src/cluster/primary.ts';

describe('worker node flags', () => {
  it('keeps the primary\'s flags and bounds the young generation', () => {
    assert.deepEqual(workerExecArgv([]), ['--max-semi-space-size=4']);
    assert.deepEqual(workerExecArgv(['--enable-source-maps']), ['--enable-source-maps', '--max-semi-space-size=4']);
  });

  it('leaves a semi-space size set on the command line or in NODE_OPTIONS as it is', () => {
    assert.deepEqual(workerExecArgv(['--max-semi-space-size=32']), ['--max-semi-space-size=32']);
    assert.deepEqual(workerExecArgv(['--max_semi_space_size', '8']), ['--max_semi_space_size', '8']);
    assert.deepEqual(workerExecArgv(['--import', 'tsx'], '--max-old-space-size=512 --max-semi-space-size=1'), ['--import', 'tsx']);
    assert.deepEqual(workerExecArgv([], '--max-old-space-size=512'), ['--max-semi-space-size=4']);
  });
});
