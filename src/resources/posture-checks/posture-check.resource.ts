/**
 * The posture check record (management seeds §2.11, upstream auth §5.1, model §3.11). One table holds every
 * type; `typeId` discriminates, and the type-specific fields live in the `details` JSON column exactly as
 * the read model shows them. The request schemas accept the fields of every type; the service checks which
 * ones the type requires.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { defineResource, roleAttributesField, type FieldSpec, nameField } from '../define-resource.ts';
import { FreeObject, Nullable, Semantic } from '../common.schema.ts';

export const postureCheckTypeIds = ['OS', 'PROCESS', 'DOMAIN', 'MAC', 'MFA', 'PROCESS_MULTI'] as const;
export type PostureCheckTypeId = (typeof postureCheckTypeIds)[number];

export const PostureCheckTypeId = Type.Unsafe<PostureCheckTypeId>({ type: 'string', enum: [...postureCheckTypeIds] });
export const OsType = Type.Unsafe<string>({ type: 'string', enum: ['Windows', 'WindowsServer', 'Android', 'iOS', 'Linux', 'macOS'] });

const StringList = Type.Array(Type.String());
const NonEmptyStringList = Type.Array(Type.String(), { minItems: 1 });
/** Stored lists read back as null when empty (upstream's nil string sets). */
const StringListRead = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } });

const OperatingSystem = Type.Object({ type: OsType, versions: StringList });
const OperatingSystemRead = Type.Object({ type: Type.String(), versions: StringListRead });
/** Optional lists of a request: generated clients send `null` for an unset list (upstream reads it as unset). */
const OptionalStringList = Type.Optional(Nullable(StringList));
const Process = Type.Object({
  osType: OsType,
  path: Type.String(),
  hashes: OptionalStringList,
  signerFingerprint: Type.Optional(Type.String()),
});
const ProcessRead = Type.Object({
  osType: Type.String(),
  path: Type.String(),
  hashes: StringListRead,
  signerFingerprint: Type.Optional(Type.String()),
});
const ProcessMulti = Type.Object({
  osType: OsType,
  path: Type.String(),
  hashes: OptionalStringList,
  signerFingerprints: OptionalStringList,
});
const ProcessMultiRead = Type.Object({
  osType: Type.String(),
  path: Type.String(),
  hashes: Type.Optional(StringList),
  signerFingerprints: Type.Optional(StringList),
});

/** A type-specific field: accepted by every request schema, stored by the service in `details`. */
function detailField(schema: TSchema, read: TSchema): FieldSpec {
  return { schema, read, create: 'optional', put: 'optional', patch: true };
}

export const postureCheckResource = defineResource({
  entityType: 'posture-checks',
  singular: 'postureCheck',
  permission: 'posture-check',
  table: 'posture_checks',
  names: { create: 'postureCheckCreate', update: 'postureCheckUpdate', patch: 'postureCheckPatch', detail: 'postureCheckDetail' },
  fields: {
    name: nameField(),
    typeId: { schema: PostureCheckTypeId, read: Type.String(), column: 'type_id', create: 'required', put: 'optional', patch: true, filter: 'string' },
    version: { schema: Type.Integer(), column: 'version', kind: 'int', filter: 'int', advertised: false },
    roleAttributes: roleAttributesField(),
    details: { schema: FreeObject, read: false, column: 'details', kind: 'json' },
    operatingSystems: detailField(Type.Array(OperatingSystem, { minItems: 1 }), Type.Array(OperatingSystemRead)),
    macAddresses: detailField(NonEmptyStringList, StringList),
    domains: detailField(NonEmptyStringList, StringList),
    process: detailField(Process, ProcessRead),
    processes: detailField(Type.Array(ProcessMulti, { minItems: 1 }), Type.Array(ProcessMultiRead)),
    semantic: detailField(Semantic, Semantic),
    timeoutSeconds: detailField(Type.Integer(), Type.Integer()),
    // Left out of the read model when false, as upstream renders them.
    promptOnWake: { ...detailField(Type.Boolean(), Type.Boolean()), empty: 'omit' },
    promptOnUnlock: { ...detailField(Type.Boolean(), Type.Boolean()), empty: 'omit' },
    ignoreLegacyEndpoints: { ...detailField(Type.Boolean(), Type.Boolean()), empty: 'omit' },
  },
  extraSymbols: {
    promptOnWake: { kind: 'scalar', type: 'bool', sql: "json_extract(e.details, '$.promptOnWake')", postgresSql: "(CASE e.details -> 'promptOnWake' WHEN 'true'::jsonb THEN 1 WHEN 'false'::jsonb THEN 0 END)" },
    promptOnUnlock: { kind: 'scalar', type: 'bool', sql: "json_extract(e.details, '$.promptOnUnlock')", postgresSql: "(CASE e.details -> 'promptOnUnlock' WHEN 'true'::jsonb THEN 1 WHEN 'false'::jsonb THEN 0 END)" },
  },
  attributes: { field: 'roleAttributes', table: 'posture_check_role_attributes', ownerColumn: 'posture_check_id', valueColumn: 'attribute' },
});

// The spec requires the discriminator on patch too.
(postureCheckResource.schemas.patch as { required?: string[] }).required = ['typeId'];
