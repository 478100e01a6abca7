/**
 * The caller's certificate extension (`extend`, `extend-verify` under `/current-identity/authenticators/{id}`),
 * offered identically on the client and management APIs.
 */
import { Type } from '@sinclair/typebox';
import type { RouteSpec } from '../../http/route.ts';
import { callerOf, peerCertificates } from '../../http/caller.ts';
import { detailEnvelope, empty, emptyEnvelope, ok } from '../../http/envelope.ts';
import { IdParams } from '../../http/list-params.ts';
import type { CertificateExtension } from './certificate-extension.ts';

const ExtendRequest = Type.Object({ clientCertCsr: Type.String() });
const ExtendVerifyRequest = Type.Object({ clientCert: Type.String() });
const ExtendCerts = Type.Object({ ca: Type.String(), clientCert: Type.String() });

export function certificateExtensionRoutes(extension: CertificateExtension): RouteSpec[] {
  const tag = 'Current API Session';
  const id = (params: unknown) => (params as { id: string }).id;
  return [
    {
      method: 'POST', url: '/current-identity/authenticators/:id/extend', operationId: 'extendCurrentIdentityAuthenticator', tag,
      summary: 'Issue a new certificate for one of the caller\'s certificate authenticators', access: 'session',
      params: IdParams, body: ExtendRequest, response: { 200: detailEnvelope(ExtendCerts) },
      handler: async (req) => {
        const { clientCertCsr } = req.body as { clientCertCsr: string };
        return ok(await extension.extend(callerOf(req).identity.id, id(req.params), clientCertCsr, peerCertificates(req)));
      },
    },
    {
      method: 'POST', url: '/current-identity/authenticators/:id/extend-verify', operationId: 'extendVerifyCurrentIdentityAuthenticator', tag,
      summary: 'Confirm receipt of the extended certificate, which then replaces the old one', access: 'session',
      params: IdParams, body: ExtendVerifyRequest, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await extension.verify(callerOf(req).identity.id, id(req.params), (req.body as { clientCert: string }).clientCert);
        return empty();
      },
    },
  ];
}
