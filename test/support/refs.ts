/**
 * The embedded references upstream renders, written out from its answers: an identity, service, edge router
 * or API session reference carries that type's full link set; other references carry `self`.
 */
const href = (path: string) => ({ href: path });

export function identityRef(id: string, name: string, authPolicyId = 'default') {
  const base = `./identities/${id}`;
  return {
    _links: {
      'auth-policies': href(`./auth-policies/${authPolicyId}`),
      authenticators: href(`${base}/authenticators`),
      'edge-router-policies': href(`${base}/edge-router-policies`),
      'edge-routers': href(`${base}/edge-routers`),
      enrollments: href(`${base}/enrollments`),
      'failed-service-requests': href(`${base}/failed-service-requests`),
      'posture-data': href(`${base}/posture-data`),
      self: href(base),
      'service-configs': href(`${base}/service-configs`),
      'service-policies': href(`${base}/service-policies`),
      services: href(`${base}/services`),
    },
    entity: 'identities',
    id,
    name,
  };
}

export function serviceRef(id: string, name: string) {
  const base = `./services/${id}`;
  return {
    _links: {
      configs: href(`${base}/configs`),
      self: href(base),
      'service-edge-router-policies': href(`${base}/service-edge-router-policies`),
      'service-policies': href(`${base}/service-policies`),
      terminators: href(`${base}/terminators`),
    },
    entity: 'services',
    id,
    name,
  };
}

export function edgeRouterRef(id: string, name: string) {
  return { _links: { 'edge-router-policies': href(`./edge-routers/${id}/edge-router-policies`), self: href(`./edge-routers/${id}`) }, entity: 'edge-routers', id, name };
}

export function apiSessionRef(id: string) {
  return { _links: { self: href(`./api-sessions/${id}`), sessions: href(`./api-sessions/${id}/sessions`) }, entity: 'api-sessions', id };
}

/** A reference whose type has no links beyond `self`. */
export function plainRef(entity: string, id: string, name: string) {
  return { _links: { self: href(`./${entity}/${id}`) }, entity, id, name };
}
