/**
 * Password hashing with argon2id (the only importer of the argon2 library). Hashes are stored as PHC
 * strings, which carry their own salt and parameters, so parameters can be raised later without a
 * migration. Parameters follow current OWASP guidance for argon2id.
 */
import { hash, verify } from '@node-rs/argon2';

const Argon2id = 2; // Algorithm.Argon2id (const enum in the library's typings)

const options = { algorithm: Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, options);
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
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
