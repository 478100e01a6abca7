/**
 * Read access to the posture check types; the read model adds the `version` upstream never fills (null).
 */
import type { Store } from '../../store/store.ts';
import type { Values } from '../../store/entity-table.ts';
import { createEntityService } from '../entity-service.ts';
import { postureCheckTypeResource } from './posture-check-type.resource.ts';

export function createPostureCheckTypeService(store: Store) {
  const entities = createEntityService(postureCheckTypeResource, store);
  function present(values: Values): Record<string, unknown> {
    return { ...postureCheckTypeResource.presentStored(values), version: null };
  }
  return { list: entities.list, get: entities.get, find: entities.find, present };
}

export type PostureCheckTypeService = ReturnType<typeof createPostureCheckTypeService>;
