/** S12: footprint at rest — RSS, database size, cold start time to the first served request. */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { percentileOf, procStats, stopChild } from '../lib.ts';
import { Bench, CLIENT } from './context.ts';
import { fetchOnce } from '../lib.ts';

const STARTS = 3;
const IDLE_MS = 1000;

export async function s12(b: Bench): Promise<void> {
  const files = readdirSync(b.opts.dataDir).filter((f) => f.endsWith('.db') || f.endsWith('.db-wal') || f.endsWith('.db-shm'));
  const dbBytes = files.reduce((sum, f) => sum + statSync(join(b.opts.dataDir, f)).size, 0);
  b.metric({ name: 'database size at rest', unit: 'MB', portcullis: dbBytes / 2 ** 20, note: files.join(', ') });
  b.notes.push(
    `Cold start: spawn of the process → first 200 of GET /edge/client/v1/version (median of ${STARTS} starts on the same data; includes Node and module loading). ` +
      `RSS at rest: ${IDLE_MS} ms after that first request, no load. The bare server is started and measured the same way.`,
  );
  await b.stopController();
  const cold: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const t0 = performance.now();
    await b.startController();
    cold.push(await firstServed(b.port, b.ca, t0));
    await new Promise((r) => setTimeout(r, IDLE_MS));
    rss.push(procStats(b.pid).rssMb);
    await b.stopController();
  }
  const version = await (async () => {
    await b.startController();
    return fetchOnce(b.port, b.ca, 'GET', `${CLIENT}/version`, { accept: 'application/json' });
  })();
  const bareCold: number[] = [];
  const bareRss: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const t0 = performance.now();
    const bare = await b.startBare({ [`${CLIENT}/version`]: { status: 200, contentType: version.contentType, bodyBase64: version.body.toString('base64') } });
    bareCold.push(await firstServed(bare.port, b.ca, t0));
    await new Promise((r) => setTimeout(r, IDLE_MS));
    bareRss.push(procStats(bare.pid).rssMb);
    await stopChild(bare.child);
  }
  const med = (xs: number[]) => percentileOf([...xs].sort((x, y) => x - y), 50);
  b.metric({ name: 'cold start to first served request', unit: 'ms', portcullis: med(cold), bare: med(bareCold), note: `starts: ${cold.map((x) => x.toFixed(0)).join(', ')} ms` });
  b.metric({ name: 'RSS at rest', unit: 'MB', portcullis: med(rss), bare: med(bareRss) });
}

async function firstServed(port: number, ca: string, since: number): Promise<number> {
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const r = await fetchOnce(port, ca, 'GET', `${CLIENT}/version`, { accept: 'application/json' }).catch(() => undefined);
    if (r?.status === 200) return performance.now() - since;
    await new Promise((res) => setTimeout(res, 5));
  }
  throw new Error('no request served within 60 s of the start');
}
