/**
 * The "certs-only" (degenerate) PKCS#7 bundle that `/.well-known/est/cacerts` serves (RFC 7030 §4.1.3,
 * enrollment.md §5): a CMS SignedData with no content, no signers, and the CA certificates. SDKs
 * base64-decode it and take the certificates as their only trust roots, so the encoding follows what
 * upstream emits byte for byte in structure: version 1, empty digest algorithms, `data` content type
 * without content, the certificates, an empty CRL set and an empty signer set.
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { encodePem, parsePemBundle, wrapLines, certificateDer, type Der } from './pem.ts';

export { parsePemBundle };

const ID_DATA = '1.2.840.113549.1.7.1';
const ID_SIGNED_DATA = '1.2.840.113549.1.7.2';

/** DER of a degenerate SignedData holding every certificate of `pems` (each entry may hold several blocks). */
export function certsToPkcs7Der(pems: readonly string[]): Der {
  const certificates = pems.flatMap(parsePemBundle).map((pem) => pkijs.Certificate.fromBER(certificateDer(pem)));
  const signedData = new pkijs.SignedData({
    version: 1,
    digestAlgorithms: [],
    encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: ID_DATA }),
    certificates,
    // Upstream encodes an empty CRL set (a1 00); keeping it makes our output structurally identical.
    crls: [],
    signerInfos: [],
  });
  const contentInfo = new pkijs.ContentInfo({ contentType: ID_SIGNED_DATA, content: signedData.toSchema(true) });
  return new Uint8Array(contentInfo.toSchema().toBER());
}

/** The cacerts body: base64 of the PKCS#7 DER in 64-character lines joined by LF, no trailing newline. */
export function certsToPkcs7Base64(pems: readonly string[]): string {
  return wrapLines(Buffer.from(certsToPkcs7Der(pems)).toString('base64'), 64);
}

/** The certificates of a PKCS#7 bundle (DER, or base64 text with any line breaks), as PEM in bundle order. */
export function pkcs7ToPems(input: Uint8Array | string): string[] {
  const der = typeof input === 'string' ? Buffer.from(input.replace(/\s+/g, ''), 'base64') : input;
  const decoded = asn1js.fromBER(new Uint8Array(der));
  if (decoded.offset === -1) throw new Error('not a DER-encoded PKCS#7 structure');
  const contentInfo = new pkijs.ContentInfo({ schema: decoded.result });
  if (contentInfo.contentType !== ID_SIGNED_DATA) throw new Error('PKCS#7 content is not SignedData');
  const signedData = new pkijs.SignedData({ schema: contentInfo.content });
  return (signedData.certificates ?? [])
    .filter((item): item is pkijs.Certificate => item instanceof pkijs.Certificate)
    .map((certificate) => encodePem(certificate.toSchema().toBER(), 'CERTIFICATE'));
}
