/**
 * Posture check rules beyond generic CRUD: the fields each type requires, their stored form (string sets
 * de-duplicated and sorted, empty lists read back as null, MFA timeouts of 0 or less stored as -1), the
 * version counter, role attributes fed to the access index, and service-update marks for the identities
 * of service policies that include a changed check.
 */
import type { Values } from '../../store/entity-table.ts';
import type { Store, Tx } from '../../store/store.ts';
import { fieldError } from '../../errors.ts';
import { parseRange } from '../../posture/semver-range.ts';
import { createEntityService, systemClock, type Clock } from '../entity-service.ts';
import { readModelValue } from '../define-resource.ts';
import { normalizeRoleAttributes, type AccessService } from '../../access/access.service.ts';
import { postureCheckResource, type PostureCheckTypeId } from './posture-check.resource.ts';

type Details = Record<string, unknown>;

/** The type-specific fields of each type, and which of them a create or put must carry. */
export const typeFields: Record<PostureCheckTypeId, { fields: string[]; required: string[] }> = {
  OS: { fields: ['operatingSystems'], required: ['operatingSystems'] },
  MAC: { fields: ['macAddresses'], required: ['macAddresses'] },
  DOMAIN: { fields: ['domains'], required: ['domains'] },
  PROCESS: { fields: ['process'], required: ['process'] },
  PROCESS_MULTI: { fields: ['processes', 'semantic'], required: ['processes', 'semantic'] },
  MFA: { fields: ['timeoutSeconds', 'promptOnWake', 'promptOnUnlock', 'ignoreLegacyEndpoints'], required: [] },
};

function stringSet(list: unknown): string[] {
  return [...new Set((list as string[] | null | undefined) ?? [])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A string set as stored: sorted, de-duplicated, null when empty. */
function storedSet(list: unknown): string[] | null {
  const s = stringSet(list);
  return s.length ? s : null;
}

/** Optional string lists inside a process entry are left out when empty. */
function withOptionalSet(target: Record<string, unknown>, key: string, list: unknown): void {
  const s = stringSet(list);
  if (s.length) target[key] = s;
}

function normalizeField(field: string, value: unknown): unknown {
  switch (field) {
    case 'operatingSystems': {
      // One entry per OS type (the last one wins), in byte order of the type name.
      const byType = new Map<string, unknown>();
      for (const os of value as Array<{ type: string; versions: string[] }>) {
        // Each version entry is a semver range the client's OS version is matched against; refuse ones that
        // can never match instead of failing every evaluation later (upstream refuses them as well).
        for (const range of os.versions ?? []) {
          if (parseRange(range) === undefined) throw fieldError('operatingSystems', `invalid version range ${range} for ${os.type}`, range);
        }
        byType.set(os.type, storedSet(os.versions));
      }
      return [...byType.keys()].sort().map((type) => ({ type, versions: byType.get(type) }));
    }
    case 'macAddresses':
      // As upstream: separators dropped, lower case, so `00:11:22:33:44:55` is stored `001122334455` and
      // compares with what clients report. Unlike upstream, what is not a MAC address afterwards is refused.
      return stringSet(
        (value as string[]).map((mac) => {
          const bare = mac.replace(/[:.\-\s]/g, '').toLowerCase();
          if (!/^[0-9a-f]{12}$/.test(bare)) throw fieldError('macAddresses', `${mac} is not a MAC address`, mac);
          return bare;
        }),
      );
    case 'domains':
      return stringSet(value);
    case 'process': {
      const p = value as Record<string, unknown>;
      const out: Record<string, unknown> = { osType: p.osType, path: p.path };
      withOptionalSet(out, 'hashes', p.hashes);
      if (typeof p.signerFingerprint === 'string' && p.signerFingerprint !== '') out.signerFingerprint = p.signerFingerprint;
      return out;
    }
    case 'processes':
      return (value as Array<Record<string, unknown>>).map((p) => {
        const out: Record<string, unknown> = { osType: p.osType, path: p.path };
        withOptionalSet(out, 'hashes', p.hashes);
        withOptionalSet(out, 'signerFingerprints', p.signerFingerprints);
        return out;
      });
    case 'timeoutSeconds':
      return (value as number) <= 0 ? -1 : value;
    default:
      return value;
  }
}

/** Zero values of the optional MFA fields (what a create or put that omits them stores). */
const zeroValues: Record<string, unknown> = { timeoutSeconds: -1, promptOnWake: false, promptOnUnlock: false, ignoreLegacyEndpoints: false };

/**
 * The stored details for a write. `base` holds the current details when a patch keeps the type; otherwise
 * the type's required fields must all be supplied.
 */
function buildDetails(typeId: PostureCheckTypeId, body: Record<string, unknown>, base: Details | undefined): Details {
  const spec = typeFields[typeId];
  const out: Details = {};
  for (const field of spec.fields) {
    const supplied = body[field];
    if (supplied !== undefined && supplied !== null) out[field] = normalizeField(field, supplied);
    else if (base && field in base) out[field] = base[field];
    else if (spec.required.includes(field)) throw fieldError(field, `${field} in body is required`, undefined);
    else out[field] = zeroValues[field];
  }
  return out;
}

export function createPostureCheckService(store: Store, access: AccessService, clock: Clock = systemClock) {
  /** Identities of the service policies that currently include the check. */
  async function touchPolicyIdentities(tx: Tx, id: string): Promise<void> {
    const identities = new Set<string>();
    for (const policyId of access.index.policiesOf('postureCheck', id, 'servicePolicy')) {
      for (const identityId of access.index.membersOf(policyId, 'identityRoles')) identities.add(identityId);
    }
    await access.touch(tx, identities);
  }

  const entities = createEntityService(
    postureCheckResource,
    store,
    {
      beforeCreate(_tx, values, body) {
        values.roleAttributes = normalizeRoleAttributes(values.roleAttributes as string[], { checkPrefix: false });
        values.version = 1;
        values.details = buildDetails(values.typeId as PostureCheckTypeId, body, undefined);
      },
      async afterCreate(tx, values) {
        await access.entityChanged(tx, 'postureCheck', values.id as string, values.roleAttributes as string[]);
      },
      beforeUpdate(_tx, existing, changes, mode, body) {
        if (changes.roleAttributes !== undefined) {
          changes.roleAttributes = normalizeRoleAttributes(changes.roleAttributes as string[], { checkPrefix: false });
        }
        const typeId = (changes.typeId ?? existing.typeId) as PostureCheckTypeId;
        changes.typeId = typeId;
        const keep = mode === 'patch' && typeId === existing.typeId ? (existing.details as Details) : undefined;
        changes.details = buildDetails(typeId, body, keep);
        changes.version = (existing.version as number) + 1;
      },
      async afterUpdate(tx, existing, changes) {
        const id = existing.id as string;
        if (changes.roleAttributes !== undefined) await access.entityChanged(tx, 'postureCheck', id, changes.roleAttributes as string[]);
        await touchPolicyIdentities(tx, id);
      },
      async beforeDelete(tx, existing) {
        await access.entityRemoved(tx, 'postureCheck', existing.id as string);
      },
    },
    clock,
  );

  /** The posture check read model: base and common fields, then the type's own fields. */
  function present(values: Values): Record<string, unknown> {
    const detail = postureCheckResource.presentStored(values);
    detail.roleAttributes = values.roleAttributes ?? [];
    for (const [name, value] of Object.entries((values.details as Details | null) ?? {})) {
      const shown = readModelValue(postureCheckResource.fields[name], value);
      if (shown !== undefined) detail[name] = shown;
    }
    // A PROCESS check's process shows `hashes` null when it has none (upstream's nil list).
    if (detail.process && typeof detail.process === 'object') detail.process = { hashes: null, ...(detail.process as object) };
    // Each process of a PROCESS_MULTI check shows both lists, empty when unset, as upstream renders them.
    if (Array.isArray(detail.processes)) {
      detail.processes = (detail.processes as Array<Record<string, unknown>>).map((p) => ({ ...p, hashes: p.hashes ?? [], signerFingerprints: p.signerFingerprints ?? [] }));
    }
    return detail;
  }

  return { ...entities, present };
}

export type PostureCheckService = ReturnType<typeof createPostureCheckService>;
