/**
 * Caller: who is making the request, resolved once per request from the `zt-session` header. Handlers
 * and permission checks read it; nothing else carries identity through the request.
 */
import type { FastifyRequest } from 'fastify';
import type { ApiSessionRecord } from '../auth/api-session.service.ts';
import type { IdentitySummary } from '../resources/identities/identity.service.ts';
import type { PeerCertificate } from 'node:tls';
import { ApiError } from '../errors.ts';

export interface Caller {
  identity: IdentitySummary;
  apiSession: ApiSessionRecord;
  /** The raw session token the client sent (never stored). */
  token: string;
  /** Primary authentication passed but a secondary factor (MFA) is still pending. */
  isPartial: boolean;
  /** Secondary factors still pending (auth.md §4.6), TOTP first; empty for a full session. */
  authQueries?: Record<string, unknown>[];
  /** Set when the caller came with an OIDC access token (src/oidc/bearer.ts) instead of a zt-session. */
  jwt?: { claims: Record<string, unknown>; expiresAt: Date };
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

/** The caller of an authenticated route; the auth hook guarantees it is set. */
export function callerOf(req: FastifyRequest): Caller {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  return req.caller;
}

/** Each connection's client certificate chain, read once (connections refuse renegotiation, so it stays). */
const chains = new WeakMap<object, PeerCertificate[]>();

/** The client certificate chain presented on this connection, leaf first (empty when none). */
export function peerCertificates(req: FastifyRequest): PeerCertificate[] {
  const socket = req.raw.socket as import('node:tls').TLSSocket;
  if (typeof socket.getPeerCertificate !== 'function') return [];
  let chain = chains.get(socket);
  if (!chain) {
    chain = readChain(socket);
    chains.set(socket, chain);
  }
  return [...chain];
}

function readChain(socket: import('node:tls').TLSSocket): PeerCertificate[] {
  const chain: PeerCertificate[] = [];
  let cert = socket.getPeerCertificate(true) as import('node:tls').DetailedPeerCertificate;
  const seen = new Set<string>();
  while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(cert);
    cert = cert.issuerCertificate;
  }
  return chain;
}
