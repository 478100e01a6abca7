/**
 * Links and embedded references of the fabric API (`/fabric/v1`), built in one place. Its records link below
 * their own base (`./routers/<id>`, not the management API's `./transit-routers/<id>`) and carry their own
 * link sets: routers and services link their terminators, circuits their terminators and services (paths
 * upstream declares but does not serve). A reference carries the referenced type's full link set, and its
 * `name` is left out when empty, as upstream renders it.
 */
import { Type } from '@sinclair/typebox';
import { Links, type Links as LinksValue } from './common.schema.ts';

export type FabricEntity = 'routers' | 'services' | 'terminators' | 'links' | 'circuits';

const nested: Record<FabricEntity, readonly string[]> = {
  routers: ['terminators'],
  services: ['terminators'],
  terminators: [],
  links: [],
  circuits: ['terminators', 'services'],
};

export function fabricLinks(entity: FabricEntity, id: string): LinksValue {
  const self = `./${entity}/${id}`;
  const out: LinksValue = { self: { href: self } };
  for (const name of nested[entity]) out[name] = { href: `${self}/${name}` };
  return out;
}

/** A reference in the fabric API: `name` is optional (omitted when empty). */
export const FabricEntityRef = Type.Object({
  _links: Links,
  entity: Type.String(),
  id: Type.String(),
  name: Type.Optional(Type.String()),
});

export interface FabricRefValue {
  _links: LinksValue;
  entity: FabricEntity;
  id: string;
  name?: string;
}

export function fabricRef(entity: FabricEntity, id: string, name: string | null | undefined): FabricRefValue {
  const ref: FabricRefValue = { _links: fabricLinks(entity, id), entity, id };
  if (name) ref.name = name;
  return ref;
}
