/**
 * Response header values built from stored text (a signer's issuer in a `WWW-Authenticate` challenge). Node
 * refuses control characters and characters above U+00FF in a header (it throws, and the answer becomes a bare
 * Fastify error), and writes U+0080-U+00FF as one byte or as two depending on how the body is sent. So every byte
 * of the text's UTF-8 outside printable ASCII is sent percent-encoded (`é` as `%C3%A9`): the same on every path,
 * and printable ASCII text, which is what issuers are in practice, goes out exactly as upstream sends it (upstream
 * writes the raw bytes).
 */
export function headerValue(text: string): string {
  return text.replace(/[^\x20-\x7e]+/g, (run) =>
    Array.from(Buffer.from(run, 'utf8'), (byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}
