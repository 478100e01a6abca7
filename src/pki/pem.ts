/**
 * PEM text <-> DER bytes. Certificates, bundles and CSRs cross the API as PEM, and upstream emits every
 * block in the standard form (64-character base64 lines, LF, a newline after the END line), so all PEM
 * this project produces goes through `encodePem`. Parsing is lenient about what surrounds the blocks
 * (CRLF, indentation, comments between blocks) because bundles come from operators and other tools.
 */
import { ApiError } from '../errors.ts';

/** DER bytes backed by a plain ArrayBuffer, the form WebCrypto and @peculiar/x509 accept. */
export type Der = Uint8Array<ArrayBuffer>;

export interface PemBlock {
  /** The label between `BEGIN ` and the dashes, e.g. `CERTIFICATE`. */
  label: string;
  der: Der;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
const BASE64_BODY = /^[A-Za-z0-9+/]*={0,2}$/;

/** Every PEM block in `text`, in order. Throws COULD_NOT_PARSE_PEM_BLOCK on a block whose body is not base64. */
export function parsePemBlocks(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  for (const match of text.matchAll(BLOCK)) {
    const label = match[1];
    const body = match[2].replace(/\s+/g, '');
    // RFC 7468 allows header lines ("Proc-Type: ...") only in legacy encrypted keys, which we never accept.
    if (body.length === 0 || body.length % 4 !== 0 || !BASE64_BODY.test(body)) {
      throw new ApiError('COULD_NOT_PARSE_PEM_BLOCK', { cause: { code: 'UNHANDLED', message: `malformed ${label} PEM block` } });
    }
    blocks.push({ label, der: new Uint8Array(Buffer.from(body, 'base64')) });
  }
  return blocks;
}

/** Standard PEM for one DER object: 64-character lines and a trailing newline. */
export function encodePem(der: Uint8Array | ArrayBuffer, label: string): string {
  const base64 = Buffer.from(der instanceof ArrayBuffer ? new Uint8Array(der) : der).toString('base64');
  return `-----BEGIN ${label}-----\n${wrapLines(base64, 64)}\n-----END ${label}-----\n`;
}

/**
 * The CERTIFICATE blocks of a bundle, each re-encoded in standard form, in order. Other blocks (keys,
 * CSRs) are skipped, so a file that mixes a leaf's key and chain yields just the chain.
 */
export function parsePemBundle(text: string): string[] {
  return parsePemBlocks(text)
    .filter((block) => block.label === 'CERTIFICATE')
    .map((block) => encodePem(block.der, 'CERTIFICATE'));
}

/** DER of the first block with one of `labels`, or undefined when there is none. */
export function firstPemDer(text: string, labels: readonly string[]): Der | undefined {
  return parsePemBlocks(text).find((block) => labels.includes(block.label))?.der;
}

/** DER of the first CERTIFICATE block; throws EXPECTED_PEM_CERTIFICATE when there is none. */
export function certificateDer(pem: string): Der {
  const der = firstPemDer(pem, ['CERTIFICATE']);
  if (!der) throw new ApiError('EXPECTED_PEM_CERTIFICATE');
  return der;
}

/** Splits `text` into lines of at most `width` characters joined by LF (no trailing newline). */
export function wrapLines(text: string, width: number): string {
  const lines: string[] = [];
  for (let i = 0; i < text.length; i += width) lines.push(text.slice(i, i + width));
  return lines.join('\n');
}
