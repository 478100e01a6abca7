/**
 * Fetches an external JWT signer's JWKS, connecting only to addresses `outbound-address.ts` allows. A host name is
 * resolved once, by the connection's own lookup: every address it resolves to is checked, and the socket connects
 * to an address from that same answer, so no second resolution can swap in another address between check and
 * connect (DNS rebinding). A literal address in the URL is checked before the request. Redirects are followed by
 * hand (at most 5), each target checked the same way; the whole fetch times out after 5 s and the body may hold
 * at most 1 MiB.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { isRefusedAddress, literalAddress } from './outbound-address.ts';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all of its addresses (the system resolver by default; tests inject their own). */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: ResolveHost = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** The fetch was not made: `host` is, or resolves to, a refused `address`. */
export class RefusedAddressError extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, a link-local or cloud metadata address`);
    this.name = 'RefusedAddressError';
  }
}

export interface JwksFetchOptions {
  resolve?: ResolveHost;
  timeoutMs?: number;
}

const MAX_REDIRECTS = 5;
const MAX_BODY_BYTES = 1024 * 1024;

/** A `net` lookup that answers from one resolution, and fails when any resolved address is refused. */
function checkedLookup(resolve: ResolveHost): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (resolved) => {
        const refused = resolved.find((a) => isRefusedAddress(a.address));
        if (refused) return callback(new RefusedAddressError(hostname, refused.address), '', 0);
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
        const usable = resolved.filter((a) => family === 0 || a.family === family);
        if (usable.length === 0) {
          return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        }
        if (options.all) return callback(null, usable);
        return callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

function get(url: URL, lookup: LookupFunction, signal: AbortSignal): Promise<IncomingMessage> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // agent: false: a fresh connection, made through `lookup`, never a pooled one.
    const req = request(url, { lookup, signal, agent: false, headers: { accept: 'application/json' } }, resolve);
    req.on('error', reject);
    req.end();
  });
}

async function readJson(res: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.destroy();
      throw new Error('JWKS body is too large');
    }
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** The parsed JSON at `url`; throws RefusedAddressError for a refused address, Error for anything else. */
export async function fetchJwks(url: string, options: JwksFetchOptions = {}): Promise<unknown> {
  const lookup = checkedLookup(options.resolve ?? systemResolver);
  const signal = AbortSignal.timeout(options.timeoutMs ?? 5000);
  let target = new URL(url);
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('unsupported JWKS URL scheme');
    const literal = literalAddress(target);
    if (literal !== undefined && isRefusedAddress(literal)) throw new RefusedAddressError(target.hostname, literal);
    const res = await get(target, lookup, signal);
    const location = res.headers.location;
    if (res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400 && location) {
      res.resume();
      target = new URL(location, target);
      continue;
    }
    if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode >= 300) {
      res.resume();
      throw new Error(`JWKS endpoint answered ${res.statusCode}`);
    }
    return readJson(res);
  }
  throw new Error('too many JWKS redirects');
}
