/**
 * Password hashing with argon2id (the only importer of the argon2 library). Hashes are stored as PHC
 * strings, which carry their own salt and parameters, so parameters can be raised later without a
 * migration. Parameters follow current OWASP guidance for argon2id.
 *
 * Hashing runs on libuv's thread pool, never on the event loop, but a login flood would still fill every
 * core with it and starve the event loops that answer everyone else. So each process hashes at most
 * `concurrency` passwords at once (`configurePasswordHashing`; the controller sets cores ÷ processes, at
 * least one); the rest wait their turn, which the admission limiter sees as latency and sheds with 429.
 */
import { hash, verify } from '@node-rs/argon2';

const Argon2id = 2; // Algorithm.Argon2id (const enum in the library's typings)

const options = { algorithm: Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

let concurrency = 1;
let active = 0;
const waiting: Array<() => void> = [];

/** Sets how many hashes this process computes at once (at least one). */
export function configurePasswordHashing(settings: { concurrency: number }): void {
  concurrency = Math.max(1, Math.floor(settings.concurrency));
  while (active < concurrency && waiting.length > 0) {
    active++;
    waiting.shift()!();
  }
}

/** Hashes computing and waiting right now, for tests and diagnostics. */
export function passwordHashingLoad(): { active: number; waiting: number; concurrency: number } {
  return { active, waiting: waiting.length, concurrency };
}

async function gated<T>(work: () => Promise<T>): Promise<T> {
  if (active < concurrency) active++;
  else await new Promise<void>((resolve) => waiting.push(resolve)); // the slot is handed over by release()
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else active--;
  }
}

export function hashPassword(password: string): Promise<string> {
  return gated(() => hash(password, options));
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await gated(() => verify(stored, password));
  } catch {
    return false;
  }
}

/** A hash of a random password, verified against when a user name is unknown so timing does not tell. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(`decoy-${Math.random()}`);
  return decoy;
}
