/**
 * Benchmark entry point: runs the selected suites against freshly started controllers on loopback.
 * Usage: npm run bench [-- --suite identities|access|enrollment|fabric|all --identities N --services M --enrollments E --duration S --connections C]
 *        npm run bench -- --suite fabric [--routers N --in-flight C --duration D --workers 1|2|1,2 --store sqlite|postgres]
 *        npm run bench -- --suite fabric-scale --size medium|large|medium,large [--routers N --repeats R --duration D --in-flight C --workers W]
 *        npm run bench -- --suite upstream --size medium|large [--duration D --connections C --rounds R --sessions N]
 *        npm run bench -- --suite oidc [--duration D --concurrency C --rounds R --key-type ec|rsa]
 *        npm run bench -- --suite ha [--duration D --rate R --tries T --repeats N --sides portcullis,upstream]
 *        npm run bench -- --suite soak [--minutes M --interval S --percent P --size SIZE --duration D --connections C --workers W]
 *        npm run bench -- --scenario S1|...|S13|all --size small|medium|large [--duration S --connections C
 *                         --open-fraction F --max-rate R --target-rate T --workers W --sessions N --data-dir DIR]
 * See bench/README.md.
 */
import { runHaScale } from './ha-scale.ts';
import { availableParallelism } from 'node:os';
import { runIdentitySuite } from './identities.ts';
import { runAccessSuite } from './access.ts';
import { runEnrollmentSuite } from './enrollment.ts';
import { runFabricSuite } from './fabric.ts';
import { runFabricScaleSuite } from './fabric-scale.ts';
import { runSoakSuite } from './soak.ts';
import { runVsUpstream } from './vs-upstream.ts';
import { runOidcBench } from './oidc.ts';
import { runHaBench } from './ha.ts';
import type { SizeName } from './datasets/sized.ts';
import { killChildren, killChildrenOnExit } from './lib.ts';
import { SCENARIOS, runScenario } from './scenarios/index.ts';
import { STORE_SCENARIOS, runStoresSuite } from './stores.ts';

const args = process.argv.slice(2);
function opt(name: string, fallback: number): number {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(args[i + 1]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} needs a positive integer`);
  return n;
}
function str(name: string): string | undefined {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
}
const scenario = str('--scenario');
const suiteIndex = args.indexOf('--suite');
const suite = suiteIndex >= 0 ? args[suiteIndex + 1] : 'all';
if (!['identities', 'access', 'enrollment', 'fabric', 'stores', 'fabric-scale', 'upstream', 'oidc', 'ha', 'ha-scale', 'soak', 'all'].includes(suite ?? '')) throw new Error('--suite must be identities, access, enrollment, fabric, stores, fabric-scale, upstream, oidc, ha, ha-scale, soak or all');
// fabric-scale: 5 s per circuit run by default (it measures twice per size, on datasets that take a while to load).
const duration = opt('--duration', scenario || suite === 'fabric-scale' || suite === 'upstream' || suite === 'oidc' ? 5 : 10);
const connections = opt('--connections', 16);

killChildrenOnExit();
try {
  if (scenario) {
    const size = str('--size') ?? 'small';
    const ids = scenario === 'all' ? Object.keys(SCENARIOS) : scenario.split(',');
    const openFraction = Number(str('--open-fraction') ?? 0.5);
    if (!(openFraction > 0 && openFraction <= 1)) throw new Error('--open-fraction must be in (0, 1]');
    const failed: string[] = [];
    for (const id of ids) {
      try {
        await runScenario(id, {
          size,
          dataDir: str('--data-dir') ?? `bench/.data/${size}`,
          duration,
          connections,
          openFraction,
          maxRate: opt('--max-rate', 3000),
          sessions: opt('--sessions', 200),
          targetRate: opt('--target-rate', 5000),
          workers: opt('--workers', 1),
        });
      } catch (err: unknown) {
        console.error(`[${id}] failed:`, err instanceof Error ? err.stack : err);
        failed.push(id);
        killChildren();
      }
    }
    if (failed.length) throw new Error(`scenarios failed: ${failed.join(', ')}`);
  }
  if (!scenario && (suite === 'identities' || suite === 'all')) {
    await runIdentitySuite({ identities: opt('--identities', 100_000), duration, connections });
  }
  if (!scenario && (suite === 'access' || suite === 'all')) {
    await runAccessSuite({ identities: opt('--access-identities', 10_000), services: opt('--services', 1_000), duration, connections });
  }
  if (!scenario && (suite === 'enrollment' || suite === 'all')) {
    await runEnrollmentSuite({ enrollments: opt('--enrollments', 250), duration, connections });
  }
  // `all` runs the fabric suite inside `stores`, on both stores.
  if (!scenario && suite === 'fabric') {
    // --workers takes one count or a list (1,2): one full run of the suite per entry.
    const workers = (str('--workers') ?? '1').split(',').map(Number);
    if (!workers.every((w) => Number.isInteger(w) && w >= 1)) throw new Error('--workers needs positive integers (e.g. 1 or 1,2)');
    const store = str('--store') ?? 'sqlite';
    if (store !== 'sqlite' && store !== 'postgres') throw new Error('--store must be sqlite or postgres');
    await runFabricSuite({ routers: opt('--routers', 100), inFlight: opt('--in-flight', 16), duration, workers, store });
  }
  if (!scenario && (suite === 'stores' || suite === 'all')) {
    const scenarios = (str('--scenarios') ?? STORE_SCENARIOS.join(',')).split(',');
    const size = (str('--size') ?? 'medium') as SizeName;
    await runStoresSuite({ size, scenarios, duration, connections, routers: opt('--routers', 100), inFlight: opt('--in-flight', 16), durability: !args.includes('--no-durability'), fabric: !args.includes('--no-fabric') });
  }
  // Not part of `all`: it needs the sized datasets (generated on first use, a minute or two for large).
  if (!scenario && suite === 'fabric-scale') {
    const sizes = (str('--size') ?? 'medium').split(',') as SizeName[];
    await runFabricScaleSuite({ sizes, routers: opt('--routers', 20), repeats: opt('--repeats', 5), duration, inFlight: opt('--in-flight', 16), workers: opt('--workers', 1) });
  }
  // Not part of `all`: 15 minutes by default. The controller runs with its default worker count (one per core).
  if (!scenario && suite === 'soak') {
    const size = str('--size') ?? 'medium';
    const percent = opt('--percent', 80);
    if (percent > 100) throw new Error('--percent must be 1-100');
    await runSoakSuite({ size, dataDir: str('--data-dir') ?? `bench/.data/${size}`, minutes: opt('--minutes', 15), intervalS: opt('--interval', 30), percent, duration, connections, sessions: opt('--sessions', 200), workers: opt('--workers', availableParallelism()) });
  }
  // Not part of `all`: it needs the upstream `ziti` program (a fresh quickstart of its own).
  if (!scenario && suite === 'oidc') {
    const keyType = str('--key-type') ?? 'ec';
    if (keyType !== 'ec' && keyType !== 'rsa') throw new Error('--key-type must be ec or rsa');
    await runOidcBench({ duration, concurrency: opt('--concurrency', 8), rounds: opt('--rounds', 2), keyType });
  }
  // Not part of `all`: it needs the upstream `ziti` program and PostgreSQL (about 4 min with the defaults).
  if (!scenario && suite === 'ha') {
    const sides = (str('--sides') ?? 'portcullis,upstream').split(',');
    if (!sides.every((s) => s === 'portcullis' || s === 'upstream')) throw new Error('--sides takes portcullis, upstream or both');
    await runHaBench({ duration, rate: opt('--rate', 200), tries: opt('--tries', 20), repeats: opt('--repeats', 5), sides: sides as Array<'portcullis' | 'upstream'> });
  }
  // Not part of `all`: K controllers on a private PostgreSQL and N scripted routers connected to each (several minutes).
  if (!scenario && suite === 'ha-scale') {
    await runHaScale({ controllers: opt('--controllers', 10), routers: opt('--routers', 200), repeats: opt('--repeats', 10) });
  }
  // Not part of `all`: it needs the upstream `ziti` program and loads the dataset into it once per size (cached).
  if (!scenario && suite === 'upstream') {
    await runVsUpstream({ size: (str('--size') ?? 'medium') as SizeName, duration, connections, rounds: opt('--rounds', 2), sessions: opt('--sessions', 200) });
  }
} catch (err: unknown) {
  console.error(err instanceof Error ? err.stack : err);
  killChildren();
  process.exitCode = 1;
}
