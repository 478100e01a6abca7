#!/usr/bin/env node
/**
 * The production build: compiles src/ to JavaScript in dist/ with tsc (tsconfig.build.json: `./x.ts` imports
 * become `./x.js`, source maps beside each file) and copies every other file under src/ that the code reads at
 * run time, i.e. everything that is neither TypeScript nor a README (today the migrations, src/store/migrations/
 * *.sql, read by src/store/migrate.ts next to the module). dist/ then runs with plain `node dist/main.js`, without
 * src/ and without a TypeScript loader; it still needs node_modules/ (the runtime dependencies).
 *
 * The output is built in a temporary folder beside dist/ and swapped in at the end, under a lock, so a build
 * never leaves a half-written dist/ and two builds (say two test runs) do not write into each other. Each build
 * records a hash of its inputs (src/, the tsconfigs, this script) in dist/.build-stamp.json.
 *
 *   node scripts/build.mjs             build (npm run build; also `prepare`, so `npm ci` and `npm install` build)
 *   node scripts/build.mjs --if-stale  build only when dist/ is missing or was built from other inputs
 *                                      (`prestart`, the start test, the interop runner); silent when fresh
 *
 * Without the typescript package (an install with --omit=dev) the build is skipped when dist/ is up to date
 * and fails otherwise: build with the dev dependencies, then `npm prune --omit=dev`.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const srcDir = join(repo, 'src');
const distDir = join(repo, 'dist');
const stampFile = join(distDir, '.build-stamp.json');
const lockDir = join(repo, '.build-lock');
const ifStale = process.argv.includes('--if-stale');

/** Every file under dir, as paths relative to it with `/` separators, sorted. */
function filesUnder(dir, base = dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) filesUnder(path, base, out);
    else if (entry.isFile()) out.push(relative(base, path).split(sep).join('/'));
  }
  return out.sort();
}

const isSource = (file) => file.endsWith('.ts');
const isAsset = (file) => !isSource(file) && !/(^|\/)README\.md$/.test(file);

/** Hash of what the output depends on: the sources and run-time files under src/, the tsconfigs, this script. */
function inputHash() {
  const hash = createHash('sha256');
  const add = (name, path) => hash.update(`${name}\0${readFileSync(path).length}\0`).update(readFileSync(path));
  for (const file of filesUnder(srcDir).filter((f) => isSource(f) || isAsset(f))) add(`src/${file}`, join(srcDir, file));
  for (const file of ['tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs']) add(file, join(repo, file));
  return hash.digest('hex');
}

function isFresh(hash) {
  try {
    return JSON.parse(readFileSync(stampFile, 'utf8')).inputs === hash && existsSync(join(distDir, 'main.js'));
  } catch {
    return false;
  }
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** One build at a time: a lock folder; one older than two minutes is left from a killed build and is taken over. */
function withLock(body) {
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(lockDir).mtimeMs > 120_000) rmSync(lockDir, { recursive: true, force: true });
      } catch {
        // removed meanwhile
      }
      if (Date.now() > deadline) throw new Error(`build: ${lockDir} is held by another build; remove it if none runs`);
      sleep(200);
    }
  }
  try {
    return body();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

class BuildError extends Error {}

function fail(message) {
  throw new BuildError(message);
}

function build() {
  const hash = inputHash();
  if (ifStale && isFresh(hash)) return; // built meanwhile by the build that held the lock
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    if (isFresh(hash)) {
      console.error('build: typescript is not installed (dev dependency); dist/ is up to date and kept');
      return;
    }
    fail('typescript is not installed (dev dependency): run `npm ci` with dev dependencies, then `npm prune --omit=dev` if wanted');
  }
  const started = Date.now();
  const tmp = join(repo, `.dist-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  try {
    const compiled = spawnSync(process.execPath, [tsc, '-p', join(repo, 'tsconfig.build.json'), '--outDir', tmp], { cwd: repo, stdio: 'inherit' });
    if (compiled.status !== 0) fail(`tsc -p tsconfig.build.json failed (exit ${compiled.status ?? compiled.signal})`);
    const assets = filesUnder(srcDir).filter(isAsset);
    for (const file of assets) {
      mkdirSync(dirname(join(tmp, file)), { recursive: true });
      copyFileSync(join(srcDir, file), join(tmp, file));
    }
    writeFileSync(join(tmp, '.build-stamp.json'), `${JSON.stringify({ inputs: hash, builtAt: new Date().toISOString() })}\n`);
    const old = join(repo, `.dist-old-${process.pid}`);
    if (existsSync(distDir)) renameSync(distDir, old);
    renameSync(tmp, distDir);
    rmSync(old, { recursive: true, force: true });
    console.error(`build: dist/ compiled from src/ (${assets.length} run-time files copied) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

try {
  if (!(ifStale && isFresh(inputHash()))) withLock(build);
} catch (err) {
  console.error(err instanceof BuildError ? `build: ${err.message}` : err);
  process.exit(1);
}
