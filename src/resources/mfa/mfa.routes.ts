/**
 * MFA operations (auth.md §4), offered identically on both APIs: the caller's own enrollment under
 * `/current-identity/mfa`, the step-up `POST /authenticate/mfa`, and `POST /current-api-session/totp-token`;
 * plus the administrator's `DELETE /identities/{id}/mfa` on the management API. The operations a partial
 * session may call (§4.6) are declared `partial`; the rest need a full session.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { RouteSpec } from '../../http/route.ts';
import { callerOf } from '../../http/caller.ts';
import { created, createEnvelope, detailEnvelope, empty, emptyEnvelope, ok } from '../../http/envelope.ts';
import { IdParams } from '../../http/list-params.ts';
import { ApiError } from '../../errors.ts';
import { baseEntityProperties, Nullable } from '../common.schema.ts';
import type { MfaService } from './mfa.service.ts';
import { onIdentity } from '../identities/identity-rights.ts';
import type { Store } from '../../store/store.ts';
import { randomUUID } from 'node:crypto';
import { signJwt, type JwtSigningKey } from '../../pki/enrollment-jwt.ts';
import { systemClock, type Clock } from '../entity-service.ts';

const MfaCode = Type.Object({ code: Type.String() });
const ValidationHeader = Type.Object({ 'mfa-validation-code': Type.Optional(Type.String()) });

const detailMfa = Type.Object({
  ...baseEntityProperties,
  isVerified: Type.Boolean(),
  provisioningUrl: Type.Optional(Type.String()),
  recoveryCodes: Nullable(Type.Array(Type.String())),
});
const detailMfaRecoveryCodes = Type.Object({ ...baseEntityProperties, recoveryCodes: Type.Array(Type.String()) });
const totpToken = Type.Object({ token: Type.String(), issuedAt: Type.String({ format: 'date-time' }) });

function codeOf(req: FastifyRequest): string {
  return String((req.body as { code?: unknown } | undefined)?.code ?? '');
}

function headerCode(req: FastifyRequest): string | undefined {
  const raw = req.headers['mfa-validation-code'];
  return Array.isArray(raw) ? raw[0] : raw;
}

/**
 * The JSON body of a GET request, which the server does not parse: `GET /current-identity/mfa/recovery-codes`
 * may carry `{code}` there instead of in the header. Anything unreadable counts as no body.
 */
async function getBody(req: FastifyRequest): Promise<{ code?: unknown } | undefined> {
  if (req.body !== undefined) return req.body as { code?: unknown };
  const length = Number(req.headers['content-length'] ?? 0);
  if (!(length > 0) || length > 64 * 1024) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of req.raw) chunks.push(chunk as Buffer);
  try {
    const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as { code?: unknown }) : undefined;
  } catch {
    return undefined;
  }
}

export function mfaRoutes(mfa: MfaService, signer?: JwtSigningKey, clock: Clock = systemClock): RouteSpec[] {
  const tag = 'MFA';
  return [
    {
      method: 'POST', url: '/authenticate/mfa', operationId: 'authenticateMfa', tag: 'Authentication',
      summary: 'Complete MFA authentication with a TOTP or recovery code', access: 'partial', body: MfaCode,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        const caller = callerOf(req);
        await mfa.authenticate(caller.identity.id, caller.apiSession.id, codeOf(req));
        return empty();
      },
    },
    {
      method: 'POST', url: '/current-api-session/totp-token', operationId: 'createTotpToken', tag: 'Current API Session',
      summary: 'Create a TOTP token (OIDC sessions only)', access: 'session', body: MfaCode,
      response: { 200: detailEnvelope(totpToken, 'null') },
      handler: async (req) => {
        const caller = callerOf(req);
        // Only sessions backed by a controller-issued JWT (OIDC) get one: SDKs hand it to routers after MFA.
        if (!caller.jwt || !signer) throw new ApiError('INVALID_BACKING_TOKEN_TYPE');
        await mfa.checkTotp(caller.identity.id, codeOf(req));
        const issuedAt = clock.now();
        const claims = caller.jwt.claims;
        const token = await signJwt(
          { iss: claims.iss, sub: caller.identity.id, aud: claims.aud, iat: Math.floor(issuedAt.getTime() / 1000), jti: randomUUID(), z_asid: caller.apiSession.id, z_t: 't' },
          signer,
        );
        return ok({ token, issuedAt: issuedAt.toISOString() });
      },
    },
    {
      method: 'GET', url: '/current-identity/mfa', operationId: 'detailMfa', tag, summary: 'The MFA enrollment of the caller',
      access: 'partial', response: { 200: detailEnvelope(detailMfa) },
      handler: async (req) => {
        const caller = callerOf(req);
        return ok(mfa.present(await mfa.recordOf(caller.identity.id), caller.identity.name));
      },
    },
    {
      method: 'POST', url: '/current-identity/mfa', operationId: 'enrollMfa', tag, summary: 'Start MFA enrollment',
      access: 'partial', response: { 201: createEnvelope },
      handler: async (req, reply) => {
        const id = await mfa.enroll(callerOf(req).identity.id);
        return reply.code(201).send(created(id, { self: { href: './current-identity/mfa' } }));
      },
    },
    {
      method: 'DELETE', url: '/current-identity/mfa', operationId: 'deleteMfa', tag, summary: 'Remove the MFA enrollment of the caller',
      access: 'session', headers: ValidationHeader, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await mfa.removeOwn(callerOf(req).identity.id, headerCode(req) ?? '');
        return empty();
      },
    },
    {
      method: 'GET', url: '/current-identity/mfa/qr-code', operationId: 'detailMfaQrCode', tag,
      summary: 'QR code (PNG) of an unverified MFA enrollment', access: 'partial', produces: ['image/png', 'application/json'],
      response: { 200: { raw: 'PNG image, 256x256, of the provisioning URL' } },
      handler: async (req, reply) => {
        const caller = callerOf(req);
        const png = await mfa.qrCode(caller.identity.id, caller.identity.name);
        return reply.code(200).header('content-type', 'image/png').send(png);
      },
    },
    {
      method: 'GET', url: '/current-identity/mfa/recovery-codes', operationId: 'detailMfaRecoveryCodes', tag,
      summary: 'The recovery codes of a verified MFA enrollment', access: 'session', headers: ValidationHeader,
      response: { 200: detailEnvelope(detailMfaRecoveryCodes) },
      handler: async (req) => {
        const body = await getBody(req);
        const code = typeof body?.code === 'string' ? body.code : (headerCode(req) ?? '');
        return ok(mfa.presentRecoveryCodes(await mfa.recoveryCodes(callerOf(req).identity.id, code)));
      },
    },
    {
      method: 'POST', url: '/current-identity/mfa/recovery-codes', operationId: 'createMfaRecoveryCodes', tag,
      summary: 'Replace all recovery codes of a verified MFA enrollment', access: 'session', body: MfaCode,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await mfa.regenerateRecoveryCodes(callerOf(req).identity.id, codeOf(req));
        return empty();
      },
    },
    {
      method: 'POST', url: '/current-identity/mfa/verify', operationId: 'verifyMfa', tag,
      summary: 'Complete MFA enrollment with a TOTP code', access: 'partial', body: MfaCode,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        const caller = callerOf(req);
        await mfa.verify(caller.identity.id, caller.apiSession.id, codeOf(req));
        return empty();
      },
    },
  ];
}

/** `DELETE /identities/{id}/mfa` (management API). */
export function identityMfaRoutes(store: Store, mfa: MfaService): RouteSpec[] {
  return [
    {
      method: 'DELETE', url: '/identities/:id/mfa', operationId: 'removeIdentityMfa', tag: 'Identity',
      summary: "Remove an identity's MFA enrollment", access: 'identity.update', actsOn: onIdentity(store, 'remove the MFA of'), params: IdParams,
      response: { 200: emptyEnvelope },
      handler: async (req) => {
        await mfa.adminRemove((req.params as { id: string }).id);
        return empty();
      },
    },
  ];
}
