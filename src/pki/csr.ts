/**
 * Parses a PKCS#10 certificate signing request once, at the boundary, into a typed `ParsedCsr` that the
 * issuer and the enrollment code use without re-checking (style rule 6). A CSR is accepted only if its
 * self-signature verifies (proof that the requester holds the private key, as upstream requires) and
 * its key is one every SDK and TLS stack handles: RSA of at least 2048 bits or ECDSA on a NIST curve.
 * Everything else becomes 400 COULD_NOT_PROCESS_CSR with the reason in the cause.
 */
import { createPublicKey } from 'node:crypto';
import { ApiError } from '../errors.ts';
import { firstPemDer, type Der } from './pem.ts';
import { subjectAltNamesFromExtensions, type SubjectAltNames } from './subject-alt-names.ts';
import { x509 } from './x509-library.ts';

export type CsrPublicKey =
  | { type: 'rsa'; bits: number; spkiDer: Der }
  | { type: 'ec'; curve: 'P-256' | 'P-384' | 'P-521'; spkiDer: Der };

export interface ParsedCsr {
  /** DER of the whole request. */
  der: Der;
  /** First CN of the subject; undefined when the subject has none. */
  commonName: string | undefined;
  /** The subject as RFC 4514-style text, for messages and logs. */
  subject: string;
  /** DER of the subject Name, copied into issued certificates so no attribute is lost. */
  subjectDer: Der;
  publicKey: CsrPublicKey;
  /** SANs requested through the CSR's extensionRequest attribute. */
  sans: SubjectAltNames;
}

const CSR_LABELS = ['CERTIFICATE REQUEST', 'NEW CERTIFICATE REQUEST'] as const;
const MIN_RSA_BITS = 2048;
const EC_CURVES: Record<string, 'P-256' | 'P-384' | 'P-521'> = {
  prime256v1: 'P-256',
  secp384r1: 'P-384',
  secp521r1: 'P-521',
};

/** Parses and verifies a CSR given as PEM (or DER bytes). Throws ApiError COULD_NOT_PROCESS_CSR. */
export async function parseCsr(input: string | Uint8Array): Promise<ParsedCsr> {
  const der = typeof input === 'string' ? csrDerFromPem(input) : new Uint8Array(input);
  const request = decodeRequest(der);
  const publicKey = classifyPublicKey(new Uint8Array(request.publicKey.rawData));
  await verifySelfSignature(request);
  return {
    der,
    commonName: request.subjectName.getField('CN')[0],
    subject: request.subject,
    subjectDer: new Uint8Array(request.subjectName.toArrayBuffer()),
    publicKey,
    sans: subjectAltNamesFromExtensions(request.extensions),
  };
}

/** The ApiError every CSR rejection uses; the reason travels in the cause as upstream renders it. */
export function csrRejected(reason: string): ApiError {
  return new ApiError('COULD_NOT_PROCESS_CSR', { cause: { code: 'UNHANDLED', message: reason } });
}

function csrDerFromPem(pem: string): Der {
  let der: Der | undefined;
  try {
    der = firstPemDer(pem, CSR_LABELS);
  } catch {
    throw csrRejected('the CSR PEM block is malformed');
  }
  if (!der) throw csrRejected('no CERTIFICATE REQUEST PEM block found');
  return der;
}

function decodeRequest(der: Der): x509.Pkcs10CertificateRequest {
  try {
    const request = new x509.Pkcs10CertificateRequest(der);
    // Touch the lazily decoded parts now so that a malformed CSR fails here and not during issuance.
    void request.subjectName;
    void request.publicKey;
    void request.extensions;
    return request;
  } catch (error) {
    throw csrRejected(`could not parse CSR: ${errorMessage(error)}`);
  }
}

function classifyPublicKey(spkiDer: Der): CsrPublicKey {
  let key;
  try {
    key = createPublicKey({ key: Buffer.from(spkiDer), format: 'der', type: 'spki' });
  } catch (error) {
    throw csrRejected(`could not read the CSR public key: ${errorMessage(error)}`);
  }
  if (key.asymmetricKeyType === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) throw csrRejected(`RSA key of ${bits} bits is too small, at least ${MIN_RSA_BITS} are required`);
    return { type: 'rsa', bits, spkiDer };
  }
  if (key.asymmetricKeyType === 'ec') {
    const curve = EC_CURVES[key.asymmetricKeyDetails?.namedCurve ?? ''];
    if (!curve) throw csrRejected(`unsupported EC curve ${key.asymmetricKeyDetails?.namedCurve ?? 'unknown'}`);
    return { type: 'ec', curve, spkiDer };
  }
  throw csrRejected(`unsupported public key type ${key.asymmetricKeyType ?? 'unknown'}, expected RSA or EC`);
}

async function verifySelfSignature(request: x509.Pkcs10CertificateRequest): Promise<void> {
  let valid: boolean;
  try {
    valid = await request.verify();
  } catch (error) {
    throw csrRejected(`could not verify the CSR signature: ${errorMessage(error)}`);
  }
  if (!valid) throw csrRejected('the CSR signature is invalid');
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
