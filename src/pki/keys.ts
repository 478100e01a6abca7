/**
 * Private keys of the controller's own PKI: generation, PEM export, and loading into the two forms the
 * rest of the code needs (a WebCrypto CryptoKey for @peculiar/x509 signing, a Node KeyObject for TLS and
 * JOSE). We generate ECDSA P-256 keys: fast, small, and their JWTs are ES256, which current SDKs verify;
 * the server key may instead be generated as RSA-4096 (RS256) for older C SDKs.
 * Loading also accepts P-384/P-521 and RSA so an operator-supplied PKI keeps working; the algorithm
 * helpers map any of them the way upstream does.
 */
import { createPrivateKey, createPublicKey, generateKeyPair as generateNodeKeyPairCallback, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { encodePem, type Der } from './pem.ts';
import { subtle } from './x509-library.ts';
import type { ServerKeyType } from './key-types.ts';

export { SERVER_KEY_TYPES, type ServerKeyType } from './key-types.ts';

export interface LoadedPrivateKey {
  /** PKCS#8 PEM, as handed to `tls.createSecureContext`. */
  pem: string;
  keyObject: KeyObject;
  /** Non-extractable WebCrypto key restricted to signing. */
  cryptoKey: CryptoKey;
  /** DER SubjectPublicKeyInfo of the matching public key, to check the key belongs to a certificate. */
  spkiDer: Der;
}

export type JwtAlgorithm = 'ES256' | 'ES384' | 'ES512' | 'RS256';

const EC_KEY_ALGORITHM: EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };

// Node reports OpenSSL curve names; WebCrypto and JOSE use the NIST ones.
const CURVES: Record<string, { webName: string; hash: string; jwtAlgorithm: JwtAlgorithm }> = {
  prime256v1: { webName: 'P-256', hash: 'SHA-256', jwtAlgorithm: 'ES256' },
  secp384r1: { webName: 'P-384', hash: 'SHA-384', jwtAlgorithm: 'ES384' },
  secp521r1: { webName: 'P-521', hash: 'SHA-512', jwtAlgorithm: 'ES512' },
};

/** A fresh extractable ECDSA P-256 key pair (extractable so that it can be written to disk once). */
export async function generateKeyPair(): Promise<CryptoKeyPair> {
  return (await subtle.generateKey(EC_KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
}


const generateNodeKeyPair = promisify(generateNodeKeyPairCallback);

/**
 * PKCS#8 PEM of a fresh server key: ECDSA P-256 (ES256 JWTs, the default) or RSA-4096 (RS256 JWTs, what an
 * upstream quickstart PKI uses; C SDK releases before 2023 verify only RSA enrollment JWT signatures).
 */
export async function generateServerKeyPem(type: ServerKeyType): Promise<string> {
  if (type === 'ec') return exportPrivateKeyPem((await generateKeyPair()).privateKey);
  const { privateKey } = await generateNodeKeyPair('rsa', { modulusLength: 4096 });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** PKCS#8 PEM ("PRIVATE KEY") of an extractable private key. */
export async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  return encodePem(await subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

/** Loads a PEM private key (PKCS#8, SEC1 or PKCS#1) into every form we use. Throws on unsupported keys. */
export async function loadPrivateKey(pem: string): Promise<LoadedPrivateKey> {
  const keyObject = createPrivateKey(pem);
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' });
  const cryptoKey = await subtle.importKey('pkcs8', pkcs8, webCryptoImportAlgorithm(keyObject), false, ['sign']);
  return {
    pem: keyObject.export({ type: 'pkcs8', format: 'pem' }).toString(),
    keyObject,
    cryptoKey,
    spkiDer: new Uint8Array(createPublicKey(keyObject).export({ type: 'spki', format: 'der' })),
  };
}

/** The JWS algorithm upstream picks for a signing key: by curve for ECDSA, RS256 for any RSA key. */
export function jwtAlgorithmFor(key: KeyObject): JwtAlgorithm {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  return ecCurve(key).jwtAlgorithm;
}

/** The signature algorithm @peculiar/x509 should use with a CA key: the hash follows the curve size. */
export function certificateSigningAlgorithm(key: CryptoKey): Algorithm | EcdsaParams {
  if (key.algorithm.name === 'ECDSA') {
    const curve = (key.algorithm as EcKeyAlgorithm).namedCurve;
    const hash = curve === 'P-384' ? 'SHA-384' : curve === 'P-521' ? 'SHA-512' : 'SHA-256';
    return { name: 'ECDSA', hash } as EcdsaParams;
  }
  return { name: 'RSASSA-PKCS1-v1_5' };
}

function webCryptoImportAlgorithm(key: KeyObject): EcKeyImportParams | RsaHashedImportParams {
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  return { name: 'ECDSA', namedCurve: ecCurve(key).webName };
}

function ecCurve(key: KeyObject): (typeof CURVES)[string] {
  const curve = key.asymmetricKeyType === 'ec' ? CURVES[key.asymmetricKeyDetails?.namedCurve ?? ''] : undefined;
  if (!curve) {
    const details = key.asymmetricKeyDetails?.namedCurve ?? key.asymmetricKeyType ?? 'unknown';
    throw new Error(`unsupported signing key type ${details}: use ECDSA P-256/P-384/P-521 or RSA`);
  }
  return curve;
}
