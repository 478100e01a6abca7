/**
 * Sealing of API session tokens: routers verify an SDK's connection against the token itself, so the
 * controller must be able to hand every live token to a router that connects later, yet the store keeps no
 * token in clear. A token is sealed with AES-256-GCM (random 96-bit nonce; the session id as additional
 * data, so a sealed token copied to another row does not open) under a key kept in the PKI directory (0600),
 * apart from the database. A database copy without the key reveals no token.
 */
import { randomBytes } from 'node:crypto';
import { ensurePkiDirectory, readPkiFile, writePkiFiles } from '../pki/pki-files.ts';
import { openAesGcm, sealAesGcm } from '../pki/aead.ts';

const KEY_BYTES = 32;

export interface TokenSeal {
  seal(token: string, sessionId: string): string;
  /** The token, or undefined when the sealed text is damaged or was sealed for another session or key. */
  open(sealed: string, sessionId: string): string | undefined;
}

export function tokenSeal(key: Buffer): TokenSeal {
  if (key.length !== KEY_BYTES) throw new Error('the session seal key must be 32 bytes');
  return {
    seal: (token, sessionId) => sealAesGcm(key, token, Buffer.from(sessionId, 'utf8')).toString('base64url'),
    open: (sealed, sessionId) => openAesGcm(key, Buffer.from(sealed, 'base64url'), Buffer.from(sessionId, 'utf8')),
  };
}

/** The seal of this data dir's PKI directory; the key is made at first use. */
export async function loadOrCreateTokenSeal(pkiDir: string): Promise<TokenSeal> {
  await ensurePkiDirectory(pkiDir);
  let text = await readPkiFile(pkiDir, 'sessionSealKey');
  if (text === undefined) {
    text = randomBytes(KEY_BYTES).toString('base64');
    await writePkiFiles(pkiDir, { sessionSealKey: text });
  }
  return tokenSeal(Buffer.from(text.trim(), 'base64'));
}
