/**
 * Seed records for the console tests, created through the management API before the browser starts.
 * Every name starts with `prefix`, so a run against a long-lived controller does not collide with an
 * earlier one and the list pages can be checked for exactly these records.
 */
import { webcrypto } from 'node:crypto';
import 'reflect-metadata'; // @peculiar/x509 needs the Reflect metadata API
import * as x509 from '@peculiar/x509';

/** A fresh self-signed CA certificate (PEM), for the certificate-authority record. */
async function caCertificatePem(commonName) {
  x509.cryptoProvider.set(webcrypto);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Date.now().toString(16),
    name: `CN=${commonName}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    keys,
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return cert.toString('pem');
}

/** Auth policy body with every primary method allowed and no secondary factor (the shape the API requires). */
export function authPolicyBody(name) {
  return {
    name,
    primary: {
      cert: { allowed: true, allowExpiredCerts: true },
      extJwt: { allowed: true, allowedSigners: [] },
      updb: {
        allowed: true, lockoutDurationMinutes: 0, maxAttempts: 5, minPasswordLength: 5,
        requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false,
      },
    },
    secondary: { requireTotp: false, requireExtJwtSigner: null },
  };
}

/**
 * Creates one record of every type the console lists and answers their names and ids:
 * `{ names: { identity: '...', ... }, ids: { identity: '...', ... }, attributes: { identity: '...', ... } }`.
 */
export async function seed(api, prefix) {
  const n = (what) => `${prefix}-${what}`;
  const attributes = { identity: n('id-attr'), service: n('svc-attr'), router: n('er-attr'), posture: n('pc-attr') };
  const ids = {};
  ids.identity = await api.create('identities', { name: n('identity'), type: 'User', isAdmin: false, roleAttributes: [attributes.identity] });
  ids.service = await api.create('services', { name: n('service'), roleAttributes: [attributes.service], encryptionRequired: true });
  // A config type of our own with one string field, so the console's config form is a single text input.
  ids.configType = await api.create('config-types', {
    name: n('config-type'),
    schema: { type: 'object', properties: { note: { type: 'string' } }, additionalProperties: false },
  });
  ids.config = await api.create('configs', { name: n('config'), configTypeId: ids.configType, data: { note: 'seeded' } });
  ids.edgeRouter = await api.create('edge-routers', { name: n('edge-router'), roleAttributes: [attributes.router], isTunnelerEnabled: false });
  ids.transitRouter = await api.create('transit-routers', { name: n('transit-router') });
  ids.servicePolicy = await api.create('service-policies', {
    name: n('service-policy'), type: 'Dial', semantic: 'AnyOf',
    identityRoles: [`#${attributes.identity}`], serviceRoles: [`#${attributes.service}`], postureCheckRoles: [],
  });
  ids.edgeRouterPolicy = await api.create('edge-router-policies', {
    name: n('edge-router-policy'), semantic: 'AnyOf', identityRoles: [`#${attributes.identity}`], edgeRouterRoles: [`#${attributes.router}`],
  });
  ids.serviceEdgeRouterPolicy = await api.create('service-edge-router-policies', {
    name: n('service-edge-router-policy'), semantic: 'AnyOf', serviceRoles: [`#${attributes.service}`], edgeRouterRoles: [`#${attributes.router}`],
  });
  ids.postureCheck = await api.create('posture-checks', { name: n('posture-check'), typeId: 'DOMAIN', domains: ['zac.example'], roleAttributes: [attributes.posture] });
  ids.authPolicy = await api.create('auth-policies', authPolicyBody(n('auth-policy')));
  ids.jwtSigner = await api.create('external-jwt-signers', {
    name: n('jwt-signer'), issuer: `${prefix}-issuer`, audience: `${prefix}-audience`, claimsProperty: 'sub',
    useExternalId: false, enabled: true, jwksEndpoint: 'https://127.0.0.1:9/jwks.json',
  });
  ids.ca = await api.create('cas', {
    name: n('ca'), certPem: await caCertificatePem(n('ca')), isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: true,
    isAuthEnabled: false, identityRoles: [], identityNameFormat: '[caName]-[commonName]',
  });
  // A terminator has no name: the list page is checked for its address.
  const terminatorAddress = `tcp:127.0.0.1:${10_000 + Math.floor(Math.random() * 50_000)}`;
  ids.terminator = await api.create('terminators', { service: ids.service, router: ids.edgeRouter, binding: 'transport', address: terminatorAddress });
  return { ids, attributes, terminatorAddress, name: n };
}
