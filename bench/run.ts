/**
 * Benchmark entry point: runs the selected suites against freshly started controllers on loopback.
 * Usage: npm run bench [-- --suite identities|access|enrollment|all --identities N --services M --enrollments E --duration S --connections C]
 * See bench/README.md.
 */
import { runIdentitySuite } from './identities.ts';
import { runAccessSuite } from './access.ts';
import { runEnrollmentSuite } from './enrollment.ts';
import { killChildren, killChildrenOnExit } from './lib.ts';

const args = process.argv.slice(2);
function opt(name: string, fallback: number): number {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(args[i + 1]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} needs a positive integer`);
  return n;
}
const suiteIndex = args.indexOf('--suite');
const suite = suiteIndex >= 0 ? args[suiteIndex + 1] : 'all';
if (!['identities', 'access', 'enrollment', 'all'].includes(suite ?? '')) throw new Error('--suite must be identities, access, enrollment or all');
const duration = opt('--duration', 10);
const connections = opt('--connections', 16);

killChildrenOnExit();
try {
  if (suite === 'identities' || suite === 'all') {
    await runIdentitySuite({ identities: opt('--identities', 100_000), duration, connections });
  }
  if (suite === 'access' || suite === 'all') {
    await runAccessSuite({ identities: opt('--access-identities', 10_000), services: opt('--services', 1_000), duration, connections });
  }
  if (suite === 'enrollment' || suite === 'all') {
    await runEnrollmentSuite({ enrollments: opt('--enrollments', 250), duration, connections });
  }
} catch (err: unknown) {
  console.error(err instanceof Error ? err.stack : err);
  killChildren();
  process.exitCode = 1;
}
