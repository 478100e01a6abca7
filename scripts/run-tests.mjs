// Runs every test file under test/ (or the files/folders given as arguments) with node's test runner
// through tsx. Node 20's runner does not expand globs or pick up .ts files by itself.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path).sort()) collect(join(path, name), out);
  } else if (path.endsWith('.test.ts')) {
    out.push(path);
  }
  return out;
}

const roots = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const files = (roots.length ? roots : ['test']).flatMap((r) => collect(r, []));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', ...flags, ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
