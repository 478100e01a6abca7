/**
 * Where the upstream `ziti` program (CLI, controller and routers in one; a black-box test peer, never part of the
 * project) comes from, shared by the interop runner and the suites: ZITI_BIN when set, else the copy in the shared
 * tools beside the repository (`../shared/tools/ziti`), unpacked once per version into a cache folder under the
 * system temp dir and reused by later runs (its SHA-256 is checked before each reuse).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The shared tools folder holding `ziti.xz`, `ziti.sha256` and `unpack`. */
export const zitiToolsDir = resolve(repo, '..', 'shared', 'tools', 'ziti');

function sha256Of(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/**
 * The path of the `ziti` program: ZITI_BIN, else the unpacked shared copy. Throws an Error saying what is missing
 * when neither is available.
 */
export function zitiBinary() {
  if (process.env.ZITI_BIN) return process.env.ZITI_BIN;
  const unpack = join(zitiToolsDir, 'unpack');
  const shaFile = join(zitiToolsDir, 'ziti.sha256');
  if (!existsSync(unpack) || !existsSync(shaFile)) {
    throw new Error(`the ziti program is needed: set ZITI_BIN, or provide ${zitiToolsDir}/unpack (see its README.md)`);
  }
  const sha = readFileSync(shaFile, 'utf8').trim().split(/\s+/)[0];
  const cacheDir = join(tmpdir(), `portcullis-ziti-${sha.slice(0, 16)}`);
  const bin = join(cacheDir, 'ziti');
  if (existsSync(bin)) {
    if (sha256Of(bin) === sha) return bin;
    rmSync(bin, { force: true });
  }
  mkdirSync(cacheDir, { recursive: true });
  // Unpack beside the final name and rename, so a concurrent run never sees a half-written program.
  const partial = join(cacheDir, `ziti.${process.pid}.partial`);
  const r = spawnSync(unpack, [partial], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) {
    rmSync(partial, { force: true });
    throw new Error(`could not unpack the ziti program with ${unpack}`);
  }
  renameSync(partial, bin);
  return bin;
}
