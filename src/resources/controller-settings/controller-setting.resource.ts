/**
 * Controller settings (seeds §2.7, management spec `controllerSettings`): the `global` record every controller
 * starts from and, per controller, an overriding record whose id is the controller's id. The only setting is
 * `oidc` with the OIDC redirect and post-logout URIs.
 */
import { Type } from '@sinclair/typebox';
import { defineResource } from '../define-resource.ts';
import { baseEntityProperties } from '../common.schema.ts';

/** The id of the settings every controller inherits. */
export const GLOBAL_SETTINGS_ID = 'global';

const UriList = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } });

/** `oidc` in requests; a list that is absent or null is not set (inherited from the global settings). */
export const OidcSettings = Type.Unsafe<{ redirectUris?: string[] | null; postLogoutUris?: string[] | null }>({
  type: 'object',
  properties: { postLogoutUris: UriList, redirectUris: UriList },
});

/** `oidc` in read models: only the lists that are set. */
export const OidcSettingsRead = Type.Object({
  postLogoutUris: Type.Optional(Type.Array(Type.String())),
  redirectUris: Type.Optional(Type.Array(Type.String())),
});

export const controllerSettingResource = defineResource({
  entityType: 'controller-settings',
  singular: 'controller setting',
  permission: 'controller-settings',
  table: 'controller_settings',
  names: { create: 'controllerSettingCreate', update: 'controllerSettingUpdate', patch: 'controllerSettingPatch', detail: 'controllerSettingDetail' },
  fields: {
    controllerId: {
      schema: Type.String(),
      read: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
      column: 'controller_id',
      create: 'required',
      filter: 'string',
    },
    oidc: { schema: OidcSettings, read: OidcSettingsRead, column: 'oidc', kind: 'json', create: 'optional', put: 'optional', patch: true, nullable: true },
  },
});

/** `{instance, effective}` of one controller, with the base fields of the record it was read from. */
export const ControllerSettingEffective = Type.Unsafe({
  type: 'object',
  properties: {
    ...baseEntityProperties,
    effective: Type.Object({ oidc: Type.Object({ postLogoutUris: Type.Array(Type.String()), redirectUris: Type.Array(Type.String()) }) }),
    instance: Type.Object({ oidc: Type.Optional(OidcSettingsRead) }),
  },
  required: ['id', 'createdAt', 'updatedAt', '_links', 'tags', 'effective', 'instance'],
});
