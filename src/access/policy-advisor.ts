/**
 * The policy advisor (`GET /identities/{id}/policy-advice/{serviceId}`, upstream model §7): whether the
 * identity may dial and bind the service, how many edge routers each side reaches, and the routers both
 * reach. Posture, verification and the disabled flag are not considered. As upstream's model, false
 * booleans and zero counts are left out and `commonRouters` is null when there are none.
 */
import { entityRef, identityRef, type EntityRefValue } from '../resources/entity-ref.ts';
import type { Sql } from '../store/store.ts';
import { notFound } from '../errors.ts';
import type { AccessIndex } from './access-index.ts';


export async function policyAdvice(store: Sql, index: AccessIndex, identityId: string, serviceId: string): Promise<Record<string, unknown>> {
  const identity = await store.get<{ name: string; auth_policy_id: string }>('SELECT name, auth_policy_id FROM identities WHERE id = ?', [identityId]);
  if (!identity) throw notFound('identity', identityId);
  const service = await store.get<{ name: string }>('SELECT name FROM services WHERE id = ?', [serviceId]);
  if (!service) throw notFound('service', serviceId);

  const permissions = index.permissions(identityId, serviceId);
  const identityRouters = index.edgeRoutersOfIdentity(identityId);
  const serviceRouters = index.edgeRoutersOfService(serviceId);
  const common: Array<EntityRefValue & { isOnline: boolean }> = [];
  for (const routerId of identityRouters) {
    if (!serviceRouters.has(routerId)) continue;
    const row = await store.get<{ name: string }>('SELECT name FROM routers WHERE id = ? AND is_edge = 1', [routerId]);
    if (row) common.push({ ...entityRef('edge-routers', routerId, row.name), isOnline: false });
  }
  common.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const out: Record<string, unknown> = {
    identityId,
    identity: identityRef(identityId, identity.name, identity.auth_policy_id),
    serviceId,
    service: entityRef('services', serviceId, service.name),
  };
  if (permissions.bind) out.isBindAllowed = true;
  if (permissions.dial) out.isDialAllowed = true;
  if (identityRouters.size > 0) out.identityRouterCount = identityRouters.size;
  if (serviceRouters.size > 0) out.serviceRouterCount = serviceRouters.size;
  out.commonRouters = common.length > 0 ? common : null;
  return out;
}
