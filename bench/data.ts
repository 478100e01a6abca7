/**
 * Generates (or reuses) a sized benchmark dataset into bench/.data/<size>/ and prints the load time.
 *
 *   npm run bench:data -- --size small|medium|large|many-services [--seed N] [--data-dir DIR] [--force] [--database-url URL]
 *
 * With `--database-url` the records go to that (empty) PostgreSQL database; the data dir holds the PKI and marker.
 */
import { DEFAULT_SEED, SIZE_NAMES, defaultDataDir, ensureSizedDataset, type SizeName } from './datasets/sized.ts';

const args = process.argv.slice(2);
const opt = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const size = (opt('--size') ?? 'small') as SizeName;
if (!SIZE_NAMES.includes(size)) {
  console.error(`--size must be one of ${SIZE_NAMES.join(', ')}`);
  process.exit(2);
}
const seedArg = opt('--seed');
const seed = seedArg === undefined ? DEFAULT_SEED : Number(seedArg);
if (!Number.isInteger(seed) || seed < 0) {
  console.error('--seed must be a non-negative integer');
  process.exit(2);
}
const dataset = await ensureSizedDataset(size, {
  seed,
  dataDir: opt('--data-dir') ?? defaultDataDir(size),
  force: args.includes('--force'),
  databaseUrl: opt('--database-url'),
});
console.log(
  `${dataset.reused ? 'reused' : 'loaded'} ${size} in ${(dataset.loadMs / 1000).toFixed(1)} s → ${dataset.dataDir}` +
    ` (${Object.entries(dataset.phasesMs ?? {})
      .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`)
      .join(', ')})`,
);
