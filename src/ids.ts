/**
 * Identifier formats as upstream issues them (clients treat them as opaque, but their shape is familiar
 * to operators): 22-character base62 UUIDs for most records, 9-character short ids for identities,
 * routers and request ids, cuid-like ids for API sessions, and UUIDv4 tokens.
 */
import { randomBytes, randomUUID } from 'node:crypto';

const base62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const shortAlphabet = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-';

/** A random UUIDv4 rendered as base62, most significant digit first, no padding. */
export function newEntityId(): string {
  let n = BigInt('0x' + randomUUID().replace(/-/g, ''));
  let out = '';
  while (n > 0n) {
    out = base62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out || '0';
}

/** A 9-character short id over `0-9a-zA-Z.-` that never starts with `.` or `-`. */
export function newShortId(): string {
  const bytes = randomBytes(9);
  let out = base62[bytes[0] % 62];
  for (let i = 1; i < 9; i++) out += shortAlphabet[bytes[i] & 63];
  return out;
}

/** A cuid-like id: `c` followed by 24 lower-case alphanumerics (API sessions). */
export function newCuid(): string {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz';
  const bytes = randomBytes(24);
  let out = 'c';
  for (const b of bytes) out += alphabet[b % 36];
  return out;
}

export function newToken(): string {
  return randomUUID();
}
