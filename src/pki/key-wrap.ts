/**
 * Wrapping of the keys every controller of a network must share (the signing intermediate's key, the session seal
 * key) so they can live in the shared store: AES-256-GCM under a key derived from the operator's cluster secret
 * with HKDF-SHA256 (salt: the network id), a random 96-bit nonce per key, and `name|networkId` as additional data,
 * so a wrapped key copied to another name or another network does not open. Pure: no files, no SQL.
 */
import { hkdfSync } from 'node:crypto';
import { openAesGcm, sealAesGcm } from './aead.ts';

const INFO = 'portcullis-key-wrap-v1';
/** The shortest secret accepted: 32 characters (a base64 of 24 random bytes, or more). */
export const MIN_SECRET_LENGTH = 32;

export interface KeyWrap {
  wrap(name: string, plaintext: string): string;
  /** The plaintext, or undefined when the secret, network or name differ, or the text is damaged. */
  unwrap(name: string, wrapped: string): string | undefined;
}

export function keyWrap(secret: string, networkId: string): KeyWrap {
  if (secret.length < MIN_SECRET_LENGTH) throw new Error(`the cluster secret must be at least ${MIN_SECRET_LENGTH} characters`);
  const kek = Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from(networkId, 'utf8'), INFO, 32));
  const aad = (name: string) => Buffer.from(`${name}|${networkId}`, 'utf8');
  return {
    wrap: (name, plaintext) => sealAesGcm(kek, plaintext, aad(name)).toString('base64'),
    unwrap: (name, wrapped) => openAesGcm(kek, Buffer.from(wrapped, 'base64'), aad(name)),
  };
}
