/** The scenario registry: id → title and body. Run through `npm run bench -- --scenario ID --size SIZE`. */
import { availableParallelism } from 'node:os';
import { Bench, type ScenarioOptions, type ScenarioResult } from './context.ts';
import { s1, s2, s3, s6, s9 } from './reads.ts';
import { s4, s5, s10 } from './auth.ts';
import { s7, s8 } from './changes.ts';
import { s12 } from './footprint.ts';
import { s13 } from './flood.ts';
import { s14 } from './router-flood.ts';

interface ScenarioDef {
  title: string;
  run: (b: Bench) => Promise<void>;
  /** Runs the controller with its default worker count (one per core, as `node .` does), whatever `--workers` says. */
  defaultWorkers?: boolean;
}

export const SCENARIOS: Record<string, ScenarioDef> = {
  S1: { title: 'GET /current-api-session/service-updates, many distinct API sessions', run: s1 },
  S2: { title: 'Tunneler tick (current-identity, edge-routers page 25, service-updates), many identities', run: s2 },
  S3: { title: 'GET /services?configTypes=all, pages of 25 and 500, typical and worst-case identity', run: s3 },
  S4: { title: 'Restart, then identities re-authenticate (certificate) and re-list their services', run: s4 },
  S5: { title: 'Password and certificate authentication', run: s5 },
  S6: { title: 'POST /sessions (Dial)', run: s6 },
  S7: { title: 'Policy and attribute changes: time until service-updates and /services reflect them', run: s7 },
  S8: { title: 'Bulk provisioning over REST (POST /identities) at concurrency 1 / 8 / 32', run: s8 },
  S9: { title: 'Management identity list: filter, sort, offsets 0 / 50k / 100k', run: s9 },
  S10: { title: 'Burst of 250 OTT enrollments', run: s10 },
  S12: { title: 'Footprint: RSS and database size at rest, cold start to first served request', run: s12 },
  S13: { title: 'service-updates latency during a 10× password-login flood, admission limits at their defaults and off', run: s13, defaultWorkers: true },
  S14: { title: 'service-updates latency while one router floods its control channel with heartbeats and malformed messages', run: s14, defaultWorkers: true },
};

export async function runScenario(id: string, opts: ScenarioOptions): Promise<ScenarioResult> {
  const def = SCENARIOS[id];
  if (!def) throw new Error(`unknown scenario ${id}; one of ${Object.keys(SCENARIOS).join(', ')} or all`);
  const b = await Bench.open(id, def.title, def.defaultWorkers ? { ...opts, workers: availableParallelism() } : opts);
  try {
    await def.run(b);
    return await b.finish();
  } finally {
    await b.close();
  }
}
