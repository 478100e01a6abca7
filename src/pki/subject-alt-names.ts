/**
 * Subject alternative names as a typed value. Upstream copies exactly four kinds between CSRs and
 * certificates (DNS names, e-mail addresses, IP addresses, URIs) and ignores the rest, so that is the
 * shape here. IP addresses are kept in canonical text form (`::1`, not `0:0:...:1`) so that "does the
 * server certificate cover the advertised host?" is a plain string comparison.
 */
import { isIP } from 'node:net';
import { x509 } from './x509-library.ts';

export interface SubjectAltNames {
  dns: string[];
  ip: string[];
  email: string[];
  uri: string[];
}

const SAN_OID = '2.5.29.17';

export function emptySubjectAltNames(): SubjectAltNames {
  return { dns: [], ip: [], email: [], uri: [] };
}

export function hasSubjectAltNames(sans: SubjectAltNames): boolean {
  return sans.dns.length + sans.ip.length + sans.email.length + sans.uri.length > 0;
}

/** Canonical text of an IP address (IPv6 compressed and lower-case), or undefined when `text` is no IP. */
export function canonicalIp(text: string): string | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const family = isIP(bare);
  if (family === 0) return undefined;
  // The WHATWG URL parser serialises IP literals canonically, which saves a hand-written IPv6 formatter.
  const host = new URL(`http://${family === 6 ? `[${bare}]` : bare}/`).hostname;
  return family === 6 ? host.slice(1, -1) : host;
}

/** True when `host` (a DNS name or an IP address) is listed in `sans`. DNS names compare case-insensitively. */
export function subjectAltNamesCover(sans: SubjectAltNames, host: string): boolean {
  const ip = canonicalIp(host);
  if (ip !== undefined) return sans.ip.includes(ip);
  const name = host.toLowerCase();
  return sans.dns.some((dns) => dns.toLowerCase() === name);
}

/** The SANs held by a certificate or CSR extension list; kinds other than the four above are ignored. */
export function subjectAltNamesFromExtensions(extensions: readonly x509.Extension[]): SubjectAltNames {
  const sans = emptySubjectAltNames();
  for (const extension of extensions) {
    if (extension.type !== SAN_OID) continue;
    const names = new x509.SubjectAlternativeNameExtension(extension.rawData).names.items;
    for (const name of names) addGeneralName(sans, name.type, name.value);
  }
  return sans;
}

/** The SAN extension for `sans`, or undefined when there are none (an empty SAN extension is invalid). */
export function subjectAltNameExtension(
  sans: SubjectAltNames,
  critical = false,
): x509.SubjectAlternativeNameExtension | undefined {
  if (!hasSubjectAltNames(sans)) return undefined;
  const names: x509.JsonGeneralNames = [
    ...sans.dns.map((value) => ({ type: 'dns' as const, value })),
    ...sans.email.map((value) => ({ type: 'email' as const, value })),
    ...sans.ip.map((value) => ({ type: 'ip' as const, value })),
    ...sans.uri.map((value) => ({ type: 'url' as const, value })),
  ];
  return new x509.SubjectAlternativeNameExtension(names, critical);
}

function addGeneralName(sans: SubjectAltNames, type: string, value: string): void {
  switch (type) {
    case 'dns':
      sans.dns.push(value);
      break;
    case 'email':
      sans.email.push(value);
      break;
    case 'ip':
      sans.ip.push(canonicalIp(value) ?? value);
      break;
    case 'url':
      sans.uri.push(value);
      break;
    default:
      // Directory names, UPNs, registered ids: upstream's Go template has no place for them either.
      break;
  }
}
