#!/usr/bin/env node
/**
 * Interop test runner: starts one Portcullis (temporary data dir, free loopback port, known admin password),
 * then runs the real-client suites against it with these environment variables:
 *
 *   PORTCULLIS_URL             https://127.0.0.1:<port>   (server root; the APIs are under /edge/...)
 *   PORTCULLIS_ADMIN_USER      default admin user name
 *   PORTCULLIS_ADMIN_PASSWORD  default admin password
 *   PORTCULLIS_CA_FILE         PEM file with the controller's CA bundle (trust anchor for TLS)
 *   PORTCULLIS_DATA_DIR        the controller's data directory (read-only for the suites)
 *
 * Suites: the Go module in test/interop/go (`go test ./...`), the Python tests in test/interop/python
 * (`python3 -m pytest`) when that folder exists, the real `ziti` CLI in test/interop/cli (node:test), upstream
 * `ziti router` processes in test/interop/router (node:test; edge and transit routers created with the CLI,
 * enrolled and run on loopback, checked over REST; then, against a controller of its own, SDK traffic through an
 * edge router: Go SDK peers, the Python openziti package, `ziti tunnel`), and the admin console in
 * test/interop/zac (node:test driving Chromium), then property-based fuzzing of the HTTP APIs with Schemathesis in
 * test/interop/fuzz (pytest, in the Python suite's virtualenv), in that order. The `ziti` program comes from ZITI_BIN, else from
 * ../shared/tools/ziti beside the repository, unpacked once into a cache under the temp dir
 * (test/interop/ziti-bin.mjs); the runner passes its path to the suites in ZITI_BIN.
 * Each suite gets a controller of its own, stopped and its data dir removed at the end; the exit code is non-zero
 * when any suite fails, when a suite runs no test (none collected, all skipped, or a `-run` filter that matches
 * nothing), or when a needed toolchain or suite folder is missing: a suite that could not run never passes. The controller is the production build, run as
 * `npm start` runs it (`node dist/main.js`, no TypeScript loader); the runner builds it first when dist/ is missing
 * or older than src/ (scripts/build.mjs --if-stale).
 *
 * Flags: `--only go|python|cli|router|zac|fuzz` runs one suite; `--only router/<name>` runs one file of the router
 * suite (`router/traffic` = test/interop/router/traffic.suite.ts); anything after `--` is passed to `go test` (e.g.
 * `-run TestX`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { zitiBinary } from './ziti-bin.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const goDir = join(here, 'go');
const pyDir = join(here, 'python');
const fuzzDir = join(here, 'fuzz');
const zacDir = join(here, 'zac');

const argv = process.argv.slice(2);
const dashDash = argv.indexOf('--');
const own = dashDash >= 0 ? argv.slice(0, dashDash) : argv;
const goExtra = dashDash >= 0 ? argv.slice(dashDash + 1) : [];
const onlyIdx = own.indexOf('--only');
const onlyArg = onlyIdx >= 0 ? own[onlyIdx + 1] : undefined;
// `router/<name>`: one file of the router suite (<name>.suite.ts).
const [only, onlyFile] = onlyArg === undefined ? [undefined, undefined] : onlyArg.split('/', 2);
const wantGo = !only || only === 'go';
const wantPython = !only || only === 'python';
const cliDir = join(here, 'cli');
const wantCli = !only || only === 'cli';
const wantZac = !only || only === 'zac';
const routerDir = join(here, 'router');
const wantRouter = !only || only === 'router';
const wantFuzz = !only || only === 'fuzz';
const knownSuites = ['go', 'python', 'cli', 'router', 'zac', 'fuzz'];
if (only !== undefined && !knownSuites.includes(only)) {
  console.error(`test:interop: unknown suite ${only}; --only takes one of ${knownSuites.join(', ')}`);
  process.exit(2);
}
if (onlyFile !== undefined && (only !== 'router' || !existsSync(join(routerDir, `${onlyFile}.suite.ts`)))) {
  console.error(`test:interop: --only ${onlyArg}: no such file; router/<name> names test/interop/router/<name>.suite.ts`);
  process.exit(2);
}

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

function have(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: 'ignore' });
  return r.status === 0;
}

function fail(message) {
  console.error(`test:interop: ${message}`);
  process.exit(1);
}

if (wantPython && !existsSync(pyDir)) fail(`the Python suite folder ${pyDir} is missing.`);
if (wantGo && !have('go', ['version'])) {
  fail('Go is required for the Go interop suite (test/interop/go) but `go` was not found on PATH; install Go >= 1.25.');
}
// The Python suite runs in its own virtualenv with pinned packages (setup.sh creates it and prints its python).
// The router suite's traffic tests use the same Python (its openziti package is the C SDK they dial with), and so
// does the fuzz suite (Schemathesis, installed by the same setup.sh).
let python = process.env.PYTHON;
// The router suite's traffic file dials with the Python openziti package.
const wantTraffic = wantRouter && (!onlyFile || onlyFile === 'traffic');
let pythonSetupFailed = false;
if ((wantPython || wantRouter || wantFuzz) && !python && existsSync(join(pyDir, 'setup.sh'))) {
  const setup = spawnSync('bash', [join(pyDir, 'setup.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (setup.status !== 0) {
    const needed = 'python3 >= 3.11 with venv and pip, and access to the package index, are required';
    if (wantPython || wantFuzz || wantTraffic) fail(`test/interop/python/setup.sh failed (${needed}); the Python, fuzz and router traffic suites need it.`);
    // Only router files that do not use the Python are selected: they run without it.
    pythonSetupFailed = true;
  } else {
    python = setup.stdout.trim().split('\n').pop();
  }
}
if ((wantPython || wantFuzz || wantTraffic) && !python) {
  fail('a Python is required for the Python, fuzz and router traffic suites: set PYTHON, or keep test/interop/python/setup.sh to make one.');
}
if (wantPython && !have(python, ['-m', 'pytest', '--version'])) {
  fail(`Python with pytest is required for test/interop/python, but \`${python} -m pytest\` does not run.`);
}
if (wantFuzz && !have(python, ['-c', 'import schemathesis'])) {
  fail(`Schemathesis is required for test/interop/fuzz, but \`${python}\` can not import it (test/interop/fuzz/requirements.txt).`);
}

/** The upstream `ziti` program (CLI and routers): ZITI_BIN, else the shared copy, unpacked once (ziti-bin.mjs). */
function zitiProgram() {
  try {
    return zitiBinary();
  } catch (err) {
    return fail(`the ziti CLI and router suites need the ziti program: ${err instanceof Error ? err.message : err}`);
  }
}
const zitiBin = wantCli || wantRouter ? zitiProgram() : undefined;
// The console suite needs Chromium and the console bundle from the shared folder beside the repo.
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const zacTarball = process.env.ZAC_TARBALL ?? resolve(repo, '..', 'shared', 'tools', 'zac', 'ziti-console-4.5.1.tar.xz');
if (wantZac && !existsSync(chromiumPath)) {
  fail(`Chromium is required for the console suite (test/interop/zac) but ${chromiumPath} was not found; install Debian's chromium package (or set CHROMIUM_PATH).`);
}
if (wantZac && !existsSync(zacTarball)) {
  fail(`the console suite (test/interop/zac) needs the console bundle at ${zacTarball} (or ZAC_TARBALL).`);
}

// The production build the controllers run: made now when dist/ is missing or was built from other sources.
const built = spawnSync(process.execPath, [join(repo, 'scripts', 'build.mjs'), '--if-stale'], { cwd: repo, stdio: 'inherit' });
if (built.status !== 0) fail('the production build (scripts/build.mjs) failed');
const controllerEntry = join(repo, 'dist', 'main.js');

/** Runs a command with its output passed through; `onLine` sees every stdout line. */
function run(cmd, args, cwd, env, onLine = () => {}) {
  return new Promise((res) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let pending = '';
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      lines.forEach(onLine);
    });
    child.on('close', (code, signal) => {
      if (pending) onLine(pending);
      res(code ?? (signal ? 1 : 0));
    });
    child.on('error', (err) => {
      console.error(err);
      res(1);
    });
  });
}

const counts = { passed: 0, failed: 0, skipped: 0 };

/** Counts `go test -v` results: every test and subtest ends with one `--- PASS/FAIL/SKIP` line. */
function countGo(line) {
  const m = /^\s*--- (PASS|FAIL|SKIP): /.exec(line);
  if (!m) return;
  if (m[1] === 'PASS') counts.passed += 1;
  else if (m[1] === 'FAIL') counts.failed += 1;
  else counts.skipped += 1;
}

/** Counts pytest's closing summary line (`=== 3 passed, 1 failed in 0.5s ===`). */
function countPytest(line) {
  const text = line.replace(/=/g, '').trim();
  if (!/^\d+ \w+(, \d+ \w+)* in [\d.]+s/.test(text)) return;
  for (const [, n, what] of text.matchAll(/(\d+) (passed|failed|skipped|error|errors)/g)) {
    if (what === 'passed') counts.passed += Number(n);
    else if (what === 'skipped') counts.skipped += Number(n);
    else counts.failed += Number(n);
  }
}

/**
 * Counts node:test's closing TAP lines (`# pass 3`, `# fail 1`, ...). A TODO test is one whose failure a known
 * gap explains: it is counted as skipped, not as passed.
 */
function countNodeTest(line) {
  const m = /^# (pass|fail|cancelled|skipped|todo) (\d+)$/.exec(line);
  if (!m) return;
  const n = Number(m[2]);
  if (m[1] === 'pass') counts.passed += n;
  else if (m[1] === 'fail' || m[1] === 'cancelled') counts.failed += n;
  else counts.skipped += n;
}

/**
 * Runs one suite (`runIt` resolves with its exit code) and fails it when it ran no test: nothing collected, every
 * test skipped, or a filter that matched nothing would otherwise pass without checking anything.
 */
async function suite(name, runIt) {
  const before = counts.passed + counts.failed;
  const code = await runIt();
  if (code === 0 && counts.passed + counts.failed === before) {
    console.error(`test:interop: the ${name} suite ran no test (none collected, or all skipped)`);
    return 1;
  }
  return code;
}

/** pytest's exit code 5 is "no tests collected": a failure, said plainly. */
function pytestCode(name, code) {
  if (code === 5) console.error(`test:interop: pytest collected no test in the ${name} suite`);
  return code;
}

/**
 * Starts a controller with a fresh data dir, runs `body(env)` against it, stops it and removes the data dir.
 * `serverKeyType` picks the key of a newly generated server certificate (and so the enrollment JWT algorithm).
 */
async function withController(serverKeyType, body) {
  const dataDir = mkdtempSync(join(tmpdir(), 'portcullis-interop-'));
  const port = await freePort();
  const adminUser = 'admin';
  const adminPassword = `Interop-${Math.random().toString(36).slice(2)}-Pw1!`;
  const url = `https://127.0.0.1:${port}`;
  // With a PostgreSQL server given (PORTCULLIS_TEST_DATABASE_URL), the controller runs on a fresh database there.
  const database = await createDatabase();

  const controller = spawn(
    process.execPath,
    [controllerEntry, '--data-dir', join(dataDir, 'data'), '--address', '127.0.0.1', '--port', String(port),
      '--advertise', '127.0.0.1', '--server-key-type', serverKeyType, '--admin-user', adminUser, '--admin-password', adminPassword,
      '--log-level', process.env.PORTCULLIS_INTEROP_LOG_LEVEL ?? 'warn'],
    { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORTCULLIS_API_SESSION_TIMEOUT_SECONDS: '1800', ...database?.env } },
  );
  let controllerOutput = '';
  const keep = (chunk) => {
    controllerOutput += chunk.toString();
    if (controllerOutput.length > 2_000_000) controllerOutput = controllerOutput.slice(-1_000_000);
  };
  controller.stdout.on('data', keep);
  controller.stderr.on('data', keep);
  let controllerExited = false;
  controller.on('exit', () => {
    controllerExited = true;
  });

  async function stopController() {
    if (controllerExited) return;
    await new Promise((res) => {
      const timer = setTimeout(() => {
        controller.kill('SIGKILL');
        res();
      }, 10_000);
      controller.once('exit', () => {
        clearTimeout(timer);
        res();
      });
      controller.kill('SIGTERM');
    });
  }

  async function waitReady() {
    const caFile = join(dataDir, 'data', 'pki', 'root-ca.cert.pem');
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (controllerExited) throw new Error(`controller exited during start:\n${controllerOutput}`);
      if (existsSync(caFile)) {
        try {
          const res = await fetchVersion(caFile);
          if (res) return;
        } catch {
          // not listening yet
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`controller did not become ready within 60 s:\n${controllerOutput}`);
  }

  async function fetchVersion(caFile) {
    const https = await import('node:https');
    return new Promise((res, rej) => {
      const req = https.get(`${url}/version`, { ca: readFileSync(caFile) }, (r) => {
        r.resume();
        r.on('end', () => res(r.statusCode === 200));
      });
      req.on('error', rej);
      req.setTimeout(2000, () => req.destroy(new Error('timeout')));
    });
  }
  let exitCode = 0;
  try {
    await waitReady();
    // The CA bundle: intermediate + root, as the controller hands it to clients.
    const pkiDir = join(dataDir, 'data', 'pki');
    const caFile = join(dataDir, 'ca-bundle.pem');
    writeFileSync(caFile, readFileSync(join(pkiDir, 'intermediate-ca.cert.pem'), 'utf8') + readFileSync(join(pkiDir, 'root-ca.cert.pem'), 'utf8'));
    const env = {
      ...process.env,
      PORTCULLIS_URL: url,
      PORTCULLIS_ADMIN_USER: adminUser,
      PORTCULLIS_ADMIN_PASSWORD: adminPassword,
      PORTCULLIS_CA_FILE: caFile,
      PORTCULLIS_DATA_DIR: join(dataDir, 'data'),
      ...database?.env,
    };
    console.log(`test:interop: Portcullis on ${url} (data ${dataDir})`);
    exitCode = await body(env);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    exitCode = 1;
  } finally {
    await stopController();
    if (exitCode !== 0 && process.env.PORTCULLIS_INTEROP_SHOW_LOG !== '0') {
      const tail = controllerOutput.split('\n').slice(-80).join('\n');
      if (tail.trim()) console.error(`--- controller output (last lines) ---\n${tail}`);
    }
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  }
  return exitCode;
}

/** A fresh database on the PostgreSQL server of PORTCULLIS_TEST_DATABASE_URL (none without it). */
async function createDatabase() {
  const server = process.env.PORTCULLIS_TEST_DATABASE_URL;
  if (!server) return undefined;
  const { default: pg } = await import('pg');
  const name = `interop_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  console.log(`test:interop: the controller's store is PostgreSQL (database ${name})`);
  return {
    env: { PORTCULLIS_DATABASE_URL: url.toString() },
    async drop() {
      const client = new pg.Client({ connectionString: server });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

let exitCode = 0;
if (wantGo) {
  // The Go SDK verifies ES256 enrollment JWTs: the default EC server key.
  exitCode ||= await withController('ec', async (env) => {
    console.log('test:interop: go test ./... (test/interop/go)');
    return suite('Go', () => run('go', ['test', '-v', '-count=1', '-timeout', '5m', ...goExtra, './...'], goDir, env, countGo));
  });
}
if (wantPython) {
  // The C SDK inside the installable openziti wheel verifies only RS256 enrollment JWTs (upstream's quickstart
  // PKI is RSA as well), so this suite runs against a controller with an RSA server key.
  const code = await withController('rsa', async (env) => {
    console.log('test:interop: python -m pytest (test/interop/python)');
    return suite('Python', async () => pytestCode('Python', await run(python, ['-m', 'pytest', '-q'], pyDir, env, countPytest)));
  });
  exitCode ||= code;
}
if (wantCli) {
  const code = await withController('ec', async (env) => {
    console.log('test:interop: ziti CLI (test/interop/cli)');
    const files = readdirSync(cliDir).filter((f) => f.endsWith('.suite.ts')).map((f) => join(cliDir, f));
    return suite('ziti CLI', () => run(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', ...files], repo, { ...env, ZITI_BIN: zitiBin }, countNodeTest));
  });
  exitCode ||= code;
}
if (wantRouter) {
  // Upstream `ziti router` processes (edge and transit) created, enrolled and run against the controller.
  // traffic.suite.ts (SDK traffic through a router) gets a controller of its own with an RSA server key: the C SDK
  // of the Python openziti wheel enrolls only with RS256 enrollment JWTs (see the Python suite above); the Go SDK,
  // the ziti CLI and the routers take either. Its routers and identities are then independent of the other files'.
  const suiteFiles = readdirSync(routerDir).filter((f) => f.endsWith('.suite.ts')).filter((f) => !onlyFile || f === `${onlyFile}.suite.ts`);
  const groups = [
    { keyType: 'ec', label: 'ziti routers', files: suiteFiles.filter((f) => f !== 'traffic.suite.ts') },
    { keyType: 'rsa', label: 'SDK traffic through a router', files: suiteFiles.filter((f) => f === 'traffic.suite.ts') },
  ];
  for (const group of groups.filter((g) => g.files.length > 0)) {
    const code = await withController(group.keyType, async (env) => {
      console.log(`test:interop: ${group.label} (test/interop/router: ${group.files.join(', ')})`);
      const suiteEnv = { ...env, ZITI_BIN: zitiBin, ...(python && !pythonSetupFailed ? { PORTCULLIS_PYTHON: python } : {}) };
      const files = group.files.map((f) => join(routerDir, f));
      return suite(group.label, () => run(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', ...files], repo, suiteEnv, countNodeTest));
    });
    exitCode ||= code;
  }
}
if (wantZac) {
  const code = await withController('ec', async (env) => {
    console.log('test:interop: node --test (test/interop/zac)');
    return suite('console', () => run(process.execPath, ['--test', '--test-reporter=tap', join(zacDir, 'console.test.mjs')], repo, { ...env, ZAC_TARBALL: zacTarball, CHROMIUM_PATH: chromiumPath }, countNodeTest));
  });
  exitCode ||= code;
}
if (wantFuzz) {
  // Schemathesis against both Edge APIs and the fabric API, as an admin and as a plain identity (README there).
  const code = await withController('ec', async (env) => {
    console.log('test:interop: schemathesis (test/interop/fuzz)');
    return suite('fuzz', async () => pytestCode('fuzz', await run(python, ['-m', 'pytest', '-q', '-s', '-p', 'no:cacheprovider', 'test_fuzz.py', 'test_oidc_fuzz.py'], fuzzDir, env, countPytest)));
  });
  exitCode ||= code;
}
if (exitCode !== 0 && counts.failed === 0) counts.failed = 1; // a suite failed without a counted test (build error, crash)
console.log(`interop: ${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}`);
process.exit(exitCode);
