/**
 * Controller settings rules beyond generic CRUD: a per-controller record takes its controller's id (the
 * controller must exist, once), the `global` record can be updated but not deleted, `oidc` keeps only its two
 * URI lists (each entry an absolute URI, de-duplicated in order), and the effective settings of a controller.
 *
 * Merge rule of the effective settings: field by field, the controller's own value when it is set, else the
 * global value, else empty. A list is "set" when present and not null, even when empty (an empty list
 * overrides a non-empty global one); lists are replaced, never concatenated.
 */
import type { Values } from '../../store/entity-table.ts';
import type { Store } from '../../store/store.ts';
import { ApiError, fieldError, notFound } from '../../errors.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import { controllerSettingResource, GLOBAL_SETTINGS_ID } from './controller-setting.resource.ts';

export interface OidcSettings {
  redirectUris?: string[];
  postLogoutUris?: string[];
}

const oidcLists = ['postLogoutUris', 'redirectUris'] as const;

// Scheme, `://`, then no whitespace: also admits the port wildcards OIDC redirect URIs use (`http://localhost:*/cb`).
const absoluteUri = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+$/;

/** Keeps only the two lists; null or absent lists are left unset. */
export function normalizeOidc(value: unknown): OidcSettings | null {
  if (value === null || value === undefined) return null;
  const input = value as Record<string, unknown>;
  const out: OidcSettings = {};
  for (const key of oidcLists) {
    const list = input[key];
    if (list === null || list === undefined) continue;
    const seen = new Set<string>();
    for (const [i, uri] of (list as string[]).entries()) {
      if (!absoluteUri.test(uri)) throw fieldError(`oidc.${key}[${i}]`, 'must be an absolute URI (scheme://...)', uri);
      seen.add(uri);
    }
    out[key] = [...seen];
  }
  return out;
}

/** Field-by-field overlay of the instance settings on the global ones (see the module comment). */
export function effectiveOidc(global: OidcSettings | null, instance: OidcSettings | null): Required<OidcSettings> {
  return {
    postLogoutUris: [...(instance?.postLogoutUris ?? global?.postLogoutUris ?? [])],
    redirectUris: [...(instance?.redirectUris ?? global?.redirectUris ?? [])],
  };
}

export function createControllerSettingService(store: Store, clock: Clock = systemClock) {
  const entities = createEntityService(
    controllerSettingResource,
    store,
    {
      async beforeCreate(tx, values) {
        const controllerId = typeof values.controllerId === 'string' ? values.controllerId.trim() : '';
        if (controllerId === '') throw fieldError('controllerId', 'controllerId is required', values.controllerId ?? '');
        if (controllerId === GLOBAL_SETTINGS_ID) throw fieldError('controllerId', 'the global settings exist already and belong to no controller', controllerId);
        if (!(await tx.get('SELECT 1 FROM controllers WHERE id = ?', [controllerId]))) throw notFound('controller', controllerId);
        if (await tx.get('SELECT 1 FROM controller_settings WHERE id = ?', [controllerId])) {
          throw fieldError('controllerId', `duplicate value '${controllerId}' in unique index on controller-settings store`, controllerId);
        }
        values.controllerId = controllerId;
        values.id = controllerId;
        if ('oidc' in values) values.oidc = normalizeOidc(values.oidc);
      },
      beforeUpdate(_tx, _existing, changes) {
        if ('oidc' in changes) changes.oidc = normalizeOidc(changes.oidc);
      },
      beforeDelete(_tx, existing) {
        if (existing.id === GLOBAL_SETTINGS_ID) {
          throw new ApiError('ENTITY_CAN_NOT_BE_DELETED', { cause: { code: 'UNHANDLED', message: 'the global controller settings can not be deleted' } });
        }
      },
    },
    clock,
  );

  function present(values: Values): Record<string, unknown> {
    const out = controllerSettingResource.presentStored(values);
    if (out.oidc === null || out.oidc === undefined) delete out.oidc;
    if (out.controllerId === undefined) out.controllerId = null;
    return out;
  }

  /**
   * The effective settings of a controller (or of `global`): 404 unless a settings record or a controller
   * with that id exists. The base fields are those of the controller's own record, else of the controller.
   */
  async function effective(id: string): Promise<Record<string, unknown>> {
    const global = await entities.get(GLOBAL_SETTINGS_ID);
    const own = await entities.find(id);
    let base: Values | undefined = own;
    if (!base) {
      const controller = await store.get<{ created_at: string; updated_at: string }>('SELECT created_at, updated_at FROM controllers WHERE id = ?', [id]);
      if (!controller) throw notFound('controller', id);
      base = { id, createdAt: controller.created_at, updatedAt: controller.updated_at, tags: {} };
    }
    const instanceOidc = (own?.oidc as OidcSettings | null | undefined) ?? null;
    return {
      _links: { self: { href: `./controller-settings/${id}/effective` } },
      createdAt: base.createdAt,
      id,
      tags: base.tags ?? {},
      updatedAt: base.updatedAt,
      effective: { oidc: effectiveOidc(global.oidc as OidcSettings | null, instanceOidc) },
      instance: instanceOidc ? { oidc: instanceOidc } : {},
    };
  }

  return { ...entities, present, effective };
}

export type ControllerSettingService = ReturnType<typeof createControllerSettingService>;
