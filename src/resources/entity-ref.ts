/**
 * Embedded references to other records (`{_links, entity, id, name}`), built in one place. As upstream, a
 * reference carries the referenced type's full link set (an identity's authenticators, policies...), not just
 * `self`; an API session reference has no name.
 */
import type { Links } from './common.schema.ts';
import { identityResource } from './identities/identity.resource.ts';
import { serviceResource } from './services/service.resource.ts';
import { edgeRouterResource } from './edge-routers/edge-router.resource.ts';
import { caLinks } from './cas/ca.resource.ts';

/** The link set of a record of each type that has more than `self`. */
const linkSets: Record<string, (id: string) => Links> = {
  identities: identityResource.links,
  services: serviceResource.links,
  'edge-routers': edgeRouterResource.links,
  'api-sessions': (id) => ({ self: { href: `./api-sessions/${id}` }, sessions: { href: `./api-sessions/${id}/sessions` } }),
};

export function linksOf(entity: string, id: string): Links {
  return linkSets[entity]?.(id) ?? { self: { href: `./${entity}/${id}` } };
}

export interface EntityRefValue {
  _links: Links;
  entity: string;
  id: string;
  name: string;
}

export function entityRef(entity: string, id: string, name: string): EntityRefValue {
  return { _links: linksOf(entity, id), entity, id, name };
}

/** An identity reference: its link set includes its auth policy. */
export function identityRef(id: string, name: string, authPolicyId: string | null | undefined): EntityRefValue {
  const ref = entityRef('identities', id, name);
  ref._links = { 'auth-policies': { href: `./auth-policies/${authPolicyId || 'default'}` }, ...ref._links };
  return ref;
}

/** A CA reference: its links follow the CA's state as in its detail. */
export function caRef(id: string, name: string, state: { isVerified?: unknown; isAutoCaEnrollmentEnabled?: unknown }): EntityRefValue {
  return { _links: caLinks(id, state), entity: 'cas', id, name };
}

/** An API session reference, which upstream renders without a name. */
export function apiSessionRef(id: string): Omit<EntityRefValue, 'name'> {
  return { _links: linksOf('api-sessions', id), entity: 'api-sessions', id };
}
