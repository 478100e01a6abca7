/**
 * The start contract, exercised on the production build as `npm start` runs it (`node dist/main.js`, the start
 * script of package.json; the build is made first when dist/ is missing or older than src/): flags, the printed
 * admin credentials at first start, the ready line, clean exit on SIGTERM, and a second start on the same data
 * dir that reuses the database, PKI and admin (a new --admin-password does not change the admin). The primary
 * and its cluster workers run the compiled JavaScript, with no TypeScript loader; `node .` (package.json's
 * `main`, the README's quick start) starts the same.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropTestDatabase, freePort, testDatabaseArgs, testDatabaseUrl } from '../support/controller.ts';
import { createClient } from '../support/client.ts';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { main: string; scripts: Record<string, string> };
/** `npm start` without npm: the start script's arguments after `node` (the script execs node in place of its shell). */
const [startProgram, ...startArgs] = pkg.scripts.start.replace(/^exec /, '').split(' ');

interface Started {
  pid: number;
  output: () => string;
  exited: Promise<number | null>;
  kill: (signal: NodeJS.Signals) => void;
}

function startProcess(args: string[], env: Record<string, string> = {}, entry: string[] = startArgs): Promise<Started> {
  // NODE_OPTIONS is dropped so that nothing (a tsx loader of the test runner, say) reaches the controller.
  const { NODE_OPTIONS: _dropped, ...inherited } = process.env;
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: repo,
    env: { ...inherited, ...env },
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
        resolve({ pid: child.pid!, output: () => out, exited, kill: (s) => child.kill(s) });
      }
    };
    child.stdout.on('data', check);
    child.on('exit', () => {
      clearTimeout(timer);
      reject(new Error(`controller exited early:\n${out}`));
    });
  });
}

/** The command lines of a process's children (Linux /proc); undefined where there is no /proc. */
function childCommandLines(pid: number): string[][] | undefined {
  if (!existsSync('/proc/self/stat')) return undefined;
  const lines: string[][] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) lines.push(readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean));
    } catch {
      // the process ended meanwhile
    }
  }
  return lines;
}

before(() => {
  assert.equal(startProgram, 'node', `the start script runs node: ${pkg.scripts.start}`);
  const built = spawnSync(process.execPath, [join(repo, 'scripts', 'build.mjs'), '--if-stale'], { cwd: repo, stdio: 'inherit' });
  assert.equal(built.status, 0, 'the production build (scripts/build.mjs) succeeds');
});

describe('npm start', () => {
  it('creates the data dir, prints the admin credentials, serves, and exits cleanly on SIGTERM; a restart reuses everything', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'portcullis-start-')), 'data');
    try {
      const port = await freePort();
      const database = await testDatabaseArgs(dataDir);
      const first = await startProcess(['--data-dir', dataDir, ...database, '--port', String(port), '--address', '127.0.0.1', '--workers', '2']);
      const workers = childCommandLines(first.pid);
      if (workers) {
        assert.equal(workers.length, 2, `two worker processes and nothing else: ${JSON.stringify(workers)}`);
        for (const argv of workers) {
          const entry = argv.indexOf(join(repo, 'dist', 'main.js'));
          assert.ok(entry > 0, `a worker runs the compiled entry point: ${argv.join(' ')}`);
          assert.ok(argv.slice(1, entry).includes('--max-semi-space-size=4'), `a worker's young generation is bounded: ${argv.join(' ')}`);
          assert.ok(!argv.some((a) => a.includes('tsx')), `no TypeScript loader in a worker: ${argv.join(' ')}`);
        }
      }
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

      const second = await startProcess(['--data-dir', dataDir, ...database, '--port', String(port), '--address', '127.0.0.1', '--admin-password', 'another-password'], {
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
      await dropTestDatabase(dataDir);
    }
  });

  it('reads its settings from PORTCULLIS_* variables', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-env-'));
    try {
      const port = await freePort();
      const databaseUrl = await testDatabaseUrl(dataDir);
      // As the README's quick start: `node .` runs package.json's main (dist/main.js).
      assert.equal(pkg.main, 'dist/main.js');
      const p = await startProcess([], {
        PORTCULLIS_DATA_DIR: dataDir,
        ...(databaseUrl ? { PORTCULLIS_DATABASE_URL: databaseUrl } : {}),
        PORTCULLIS_PORT: String(port),
        PORTCULLIS_ADDRESS: '127.0.0.1',
        PORTCULLIS_ADVERTISE: 'ctrl.example.test',
        PORTCULLIS_ADMIN_USER: 'operator',
        PORTCULLIS_ADMIN_PASSWORD: 'operator-pass',
      }, ['.']);
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
      await dropTestDatabase(dataDir);
    }
  });
});
