/**
 * Which addresses the controller may connect to when it fetches an external JWT signer's JWKS. The endpoint is
 * chosen by an administrator, but a fetch made by the controller must not become a way to read the link-local
 * network or a cloud instance-metadata service (credentials live there), so those are refused: 169.254.0.0/16,
 * fe80::/10, fd00:ec2::254 (AWS's IPv6 metadata address) and 100.100.100.200 (Alibaba's), also written as
 * IPv4-mapped IPv6. Loopback and private ranges stay allowed: self-hosted identity providers live there.
 *
 * The rule is applied to literal addresses when a signer is written, and to every address a host name resolves
 * to when the JWKS is fetched (`jwks-fetch.ts`).
 */
import { BlockList, isIP } from 'node:net';

const refused = new BlockList();
refused.addSubnet('169.254.0.0', 16, 'ipv4');
refused.addAddress('100.100.100.200', 'ipv4');
refused.addSubnet('fe80::', 10, 'ipv6');
refused.addAddress('fd00:ec2::254', 'ipv6');

/** True when `address` (an IP address without brackets) may not be connected to. Not an address: false. */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  // BlockList matches IPv4-mapped IPv6 (::ffff:169.254.169.254) against the IPv4 subnets.
  return refused.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The IP address a URL's host names literally (brackets removed), or undefined for a host name. */
export function literalAddress(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) === 0 ? undefined : host;
}

/**
 * Why `text` can not be a JWKS endpoint, or undefined when it can: it must be an absolute http or https URL with
 * a host, and a literal address must not be refused. The URL parser has already normalised odd IPv4 spellings
 * (`0xa9.0xfe.0xa9.0xfe`, `2852039166`) and IPv6 forms, so the check sees the address that would be dialled.
 */
export function jwksEndpointProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'jwksEndpoint must be an http or https URL';
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    return 'jwksEndpoint must be an http or https URL';
  }
  const literal = literalAddress(url);
  if (literal !== undefined && isRefusedAddress(literal)) {
    return 'jwksEndpoint must not address a link-local or cloud metadata address';
  }
  return undefined;
}
