/**
 * The start contract, exercised on the real entry point as `npm start` runs it: flags, the printed admin
 * credentials at first start, the ready line, clean exit on SIGTERM, and a second start on the same data
 * dir that reuses the database, PKI and admin (a new --admin-password does not change the admin).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/controller.ts';
import { createClient } from '../support/client.ts';

interface Started {
  output: () => string;
  exited: Promise<number | null>;
  kill: (signal: NodeJS.Signals) => void;
}

function startProcess(args: string[], env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`controller did not get ready:\n${out}`)), 30000);
    const check = () => {
      if (out.includes('Portcullis ready')) {
        clearTimeout(timer);
        resolve({ output: () => out, exited, kill: (s) => child.kill(s) });
      }
    };
    child.stdout.on('data', check);
    child.on('exit', () => {
      clearTimeout(timer);
      reject(new Error(`controller exited early:\n${out}`));
    });
  });
}

describe('npm start', () => {
  it('creates the data dir, prints the admin credentials, serves, and exits cleanly on SIGTERM; a restart reuses everything', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'portcullis-start-')), 'data');
    try {
      const port = await freePort();
      const first = await startProcess(['--data-dir', dataDir, '--port', String(port), '--address', '127.0.0.1']);
      const printed = /username: (\S+)\s+password: (\S+)/.exec(first.output());
      assert.ok(printed, `credentials printed:\n${first.output()}`);
      const [, username, password] = printed;
      assert.equal(username, 'admin');
      const ca = readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
      for (const f of ['root-ca.key.pem', 'intermediate-ca.key.pem', 'server.key.pem']) {
        assert.equal(statSync(join(dataDir, 'pki', f)).mode & 0o777, 0o600, `${f} is 0600`);
      }
      const http = createClient(`https://localhost:${port}`, ca);
      const login = await http.post('/edge/management/v1/authenticate?method=password', { username, password });
      assert.equal(login.status, 200, login.text);
      first.kill('SIGTERM');
      assert.equal(await first.exited, 0);

      const second = await startProcess(['--data-dir', dataDir, '--port', String(port), '--address', '127.0.0.1', '--admin-password', 'another-password'], {
        PORTCULLIS_LOG_LEVEL: 'info',
      });
      assert.doesNotMatch(second.output(), /password:/, 'no credentials printed on a later start');
      const again = await http.post('/edge/management/v1/authenticate?method=password', { username, password });
      assert.equal(again.status, 200, 'the original admin password still works');
      const changed = await http.post('/edge/management/v1/authenticate?method=password', { username, password: 'another-password' });
      assert.equal(changed.status, 401, 'a new --admin-password does not change the admin');
      second.kill('SIGINT');
      assert.equal(await second.exited, 0);
    } finally {
      rmSync(join(dataDir, '..'), { recursive: true, force: true });
    }
  });

  it('reads its settings from PORTCULLIS_* variables', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-env-'));
    try {
      const port = await freePort();
      const p = await startProcess([], {
        PORTCULLIS_DATA_DIR: dataDir,
        PORTCULLIS_PORT: String(port),
        PORTCULLIS_ADDRESS: '127.0.0.1',
        PORTCULLIS_ADVERTISE: 'ctrl.example.test',
        PORTCULLIS_ADMIN_USER: 'operator',
        PORTCULLIS_ADMIN_PASSWORD: 'operator-pass',
      });
      const ca = readFileSync(join(dataDir, 'pki', 'root-ca.cert.pem'), 'utf8');
      const http = createClient(`https://localhost:${port}`, ca);
      const version = await http.get('/version');
      assert.equal(version.body.data.apiVersions['edge-client'].v1.apiBaseUrls[0], `https://ctrl.example.test:${port}/edge/client/v1`);
      const login = await http.post('/edge/client/v1/authenticate?method=password', { username: 'operator', password: 'operator-pass' });
      assert.equal(login.status, 200, login.text);
      p.kill('SIGTERM');
      assert.equal(await p.exited, 0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
