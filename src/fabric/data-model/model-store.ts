/**
 * The entities of the router data model as the store holds them, converted to the shapes of the DataState
 * events (`edge.DataState.*`): config types, configs, identities, services, posture checks (with their
 * subtype), service policies, and the third-party CA certificates published as public keys. One entity by id
 * (a change set re-reads what a feed row names) or every entity of a kind (the full state), each list ordered
 * by id so a full state is the same for the same store.
 *
 * Field rules follow upstream's controller (sync_strats/sync_instant.go: newIdentity, newService, newConfig,
 * newPostureCheck, newServicePolicy): hosting precedences as the TerminatorPrecedence enum, app data as its JSON
 * bytes (none when empty), service config overrides as serviceId → {configTypeId → configId}, `disabled` as the
 * REST side computes it now. One deliberate difference: a PROCESS check without a signer fingerprint is sent with
 * no fingerprint, where upstream sends one empty string (which no process can match on the router).
 */
import { certificateDer, parsePemBundle } from '../../pki/pem.ts';
import type { Sql } from '../../store/store.ts';
import { isDisabledNow } from '../../resources/identities/identity.service.ts';
import type { ProtoInput } from '../proto/index.ts';
import {
  PolicyType,
  PublicKeyFormat,
  PublicKeyUsage,
  TerminatorPrecedence,
  type DataStateConfig,
  type DataStateConfigType,
  type DataStateIdentity,
  type DataStatePostureCheck,
  type DataStatePublicKey,
  type DataStateRevocation,
  type DataStateService,
  type DataStateServicePolicy,
} from '../proto/edge-ctrl.ts';
import { keyId } from '../edge-sync.ts';

export type ConfigTypeModel = ProtoInput<DataStateConfigType>;
export type ConfigModel = ProtoInput<DataStateConfig>;
export type IdentityModel = ProtoInput<DataStateIdentity>;
export type ServiceModel = ProtoInput<DataStateService>;
export type PostureCheckModel = ProtoInput<DataStatePostureCheck>;
export type ServicePolicyModel = ProtoInput<DataStateServicePolicy>;
export type PublicKeyModel = ProtoInput<DataStatePublicKey>;

const PRECEDENCE: Record<string, TerminatorPrecedence> = {
  default: TerminatorPrecedence.Default,
  required: TerminatorPrecedence.Required,
  failed: TerminatorPrecedence.Failed,
};

function precedence(value: unknown): TerminatorPrecedence {
  return PRECEDENCE[String(value).toLowerCase()] ?? TerminatorPrecedence.Default;
}

function jsonObject(text: string | null): Record<string, unknown> {
  if (!text) return {};
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function stringList(text: string | null): string[] {
  if (!text) return [];
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}

// ---- config types and configs ------------------------------------------------------------------------------

interface ConfigTypeRow {
  id: string;
  name: string;
}

export async function readConfigType(q: Sql, id: string): Promise<ConfigTypeModel | undefined> {
  const row = await q.get<ConfigTypeRow>('SELECT id, name FROM config_types WHERE id = ?', [id]);
  return row && { id: row.id, name: row.name };
}

export async function readConfigTypes(q: Sql): Promise<ConfigTypeModel[]> {
  return (await q.all<ConfigTypeRow>('SELECT id, name FROM config_types ORDER BY id')).map((r) => ({ id: r.id, name: r.name }));
}

interface ConfigRow {
  id: string;
  name: string;
  config_type_id: string;
  data: string;
}

function configModel(row: ConfigRow): ConfigModel {
  return { id: row.id, typeId: row.config_type_id, name: row.name, dataJson: JSON.stringify(jsonObject(row.data)) };
}

export async function readConfig(q: Sql, id: string): Promise<ConfigModel | undefined> {
  const row = await q.get<ConfigRow>('SELECT id, name, config_type_id, data FROM configs WHERE id = ?', [id]);
  return row && configModel(row);
}

export async function readConfigs(q: Sql): Promise<ConfigModel[]> {
  return (await q.all<ConfigRow>('SELECT id, name, config_type_id, data FROM configs ORDER BY id')).map(configModel);
}

// ---- identities --------------------------------------------------------------------------------------------

interface IdentityRow {
  id: string;
  name: string;
  default_hosting_cost: number;
  default_hosting_precedence: string;
  service_hosting_costs: string | null;
  service_hosting_precedences: string | null;
  app_data: string | null;
  disabled_at: string | null;
  disabled_until: string | null;
}

interface OverrideRow {
  identity_id: string;
  service_id: string;
  config_type_id: string;
  config_id: string;
}

const IDENTITY_COLUMNS =
  'id, name, default_hosting_cost, default_hosting_precedence, service_hosting_costs, service_hosting_precedences, app_data, disabled_at, disabled_until';

function identityModel(row: IdentityRow, overrides: readonly OverrideRow[], now: Date): IdentityModel {
  const serviceHostingPrecedences: Record<string, TerminatorPrecedence> = {};
  for (const [serviceId, value] of Object.entries(jsonObject(row.service_hosting_precedences))) serviceHostingPrecedences[serviceId] = precedence(value);
  const serviceHostingCosts: Record<string, number> = {};
  for (const [serviceId, value] of Object.entries(jsonObject(row.service_hosting_costs))) {
    if (typeof value === 'number') serviceHostingCosts[serviceId] = value >>> 0;
  }
  const appData = jsonObject(row.app_data);
  const serviceConfigs: Record<string, { configs: Record<string, string> }> = {};
  for (const o of overrides) (serviceConfigs[o.service_id] ??= { configs: {} }).configs[o.config_type_id] = o.config_id;
  return {
    id: row.id,
    name: row.name,
    defaultHostingPrecedence: precedence(row.default_hosting_precedence),
    defaultHostingCost: row.default_hosting_cost >>> 0,
    serviceHostingPrecedences,
    serviceHostingCosts,
    appDataJson: Object.keys(appData).length > 0 ? Buffer.from(JSON.stringify(appData), 'utf8') : Buffer.alloc(0),
    serviceConfigs,
    disabled: isDisabledNow(row.disabled_at, row.disabled_until, now),
  };
}

export async function readIdentity(q: Sql, id: string, now = new Date()): Promise<IdentityModel | undefined> {
  const row = await q.get<IdentityRow>(`SELECT ${IDENTITY_COLUMNS} FROM identities WHERE id = ?`, [id]);
  if (!row) return undefined;
  const overrides = await q.all<OverrideRow>(
    'SELECT identity_id, service_id, config_type_id, config_id FROM identity_service_configs WHERE identity_id = ? ORDER BY service_id, config_type_id',
    [id],
  );
  return identityModel(row, overrides, now);
}

export async function readIdentities(q: Sql, now = new Date()): Promise<IdentityModel[]> {
  const overrides = new Map<string, OverrideRow[]>();
  for (const o of await q.all<OverrideRow>('SELECT identity_id, service_id, config_type_id, config_id FROM identity_service_configs ORDER BY identity_id, service_id, config_type_id')) {
    let list = overrides.get(o.identity_id);
    if (!list) overrides.set(o.identity_id, (list = []));
    list.push(o);
  }
  return (await q.all<IdentityRow>(`SELECT ${IDENTITY_COLUMNS} FROM identities ORDER BY id`)).map((row) => identityModel(row, overrides.get(row.id) ?? [], now));
}

// ---- services ----------------------------------------------------------------------------------------------

interface ServiceRow {
  id: string;
  name: string;
  encryption_required: number;
  configs: string | null;
}

function serviceModel(row: ServiceRow): ServiceModel {
  return { id: row.id, name: row.name, encryptionRequired: row.encryption_required === 1, configs: stringList(row.configs) };
}

export async function readService(q: Sql, id: string): Promise<ServiceModel | undefined> {
  const row = await q.get<ServiceRow>('SELECT id, name, encryption_required, configs FROM services WHERE id = ?', [id]);
  return row && serviceModel(row);
}

export async function readServices(q: Sql): Promise<ServiceModel[]> {
  return (await q.all<ServiceRow>('SELECT id, name, encryption_required, configs FROM services ORDER BY id')).map(serviceModel);
}

// ---- posture checks ----------------------------------------------------------------------------------------

interface PostureCheckRow {
  id: string;
  name: string;
  type_id: string;
  details: string | null;
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

function postureCheckModel(row: PostureCheckRow): PostureCheckModel {
  const d = jsonObject(row.details);
  const out: PostureCheckModel = { id: row.id, name: row.name, typeId: row.type_id };
  switch (row.type_id) {
    case 'MAC':
      out.mac = { macAddresses: strings(d.macAddresses) };
      break;
    case 'DOMAIN':
      out.domains = { domains: strings(d.domains) };
      break;
    case 'OS':
      out.osList = {
        osList: (Array.isArray(d.operatingSystems) ? (d.operatingSystems as Array<Record<string, unknown>>) : []).map((os) => ({
          osType: String(os.type ?? ''),
          osVersions: strings(os.versions),
        })),
      };
      break;
    case 'PROCESS': {
      const p = (d.process ?? {}) as Record<string, unknown>;
      const print = typeof p.signerFingerprint === 'string' && p.signerFingerprint !== '' ? [p.signerFingerprint] : [];
      out.process = { osType: String(p.osType ?? ''), path: String(p.path ?? ''), hashes: strings(p.hashes), fingerprints: print };
      break;
    }
    case 'PROCESS_MULTI':
      out.processMulti = {
        semantic: String(d.semantic ?? ''),
        processes: (Array.isArray(d.processes) ? (d.processes as Array<Record<string, unknown>>) : []).map((p) => ({
          osType: String(p.osType ?? ''),
          path: String(p.path ?? ''),
          hashes: strings(p.hashes),
          fingerprints: strings(p.signerFingerprints),
        })),
      };
      break;
    case 'MFA':
      out.mfa = {
        timeoutSeconds: BigInt(typeof d.timeoutSeconds === 'number' ? Math.trunc(d.timeoutSeconds) : -1),
        promptOnWake: d.promptOnWake === true,
        promptOnUnlock: d.promptOnUnlock === true,
        ignoreLegacyEndpoints: d.ignoreLegacyEndpoints === true,
      };
      break;
  }
  return out;
}

export async function readPostureCheck(q: Sql, id: string): Promise<PostureCheckModel | undefined> {
  const row = await q.get<PostureCheckRow>('SELECT id, name, type_id, details FROM posture_checks WHERE id = ?', [id]);
  return row && postureCheckModel(row);
}

export async function readPostureChecks(q: Sql): Promise<PostureCheckModel[]> {
  return (await q.all<PostureCheckRow>('SELECT id, name, type_id, details FROM posture_checks ORDER BY id')).map(postureCheckModel);
}

// ---- service policies --------------------------------------------------------------------------------------

interface ServicePolicyRow {
  id: string;
  name: string;
  policy_type: string;
}

function servicePolicyModel(row: ServicePolicyRow): ServicePolicyModel {
  return { id: row.id, name: row.name, policyType: row.policy_type === 'Bind' ? PolicyType.Bind : PolicyType.Dial };
}

export async function readServicePolicy(q: Sql, id: string): Promise<ServicePolicyModel | undefined> {
  const row = await q.get<ServicePolicyRow>('SELECT id, name, policy_type FROM service_policies WHERE id = ?', [id]);
  return row && servicePolicyModel(row);
}

export async function readServicePolicies(q: Sql): Promise<ServicePolicyModel[]> {
  return (await q.all<ServicePolicyRow>('SELECT id, name, policy_type FROM service_policies ORDER BY id')).map(servicePolicyModel);
}

/**
 * What decides the members of each role list of a service policy, as stored: its semantic and the list (stored
 * sorted and de-duplicated). While they stay the same, a write to the policy cannot change its members; only the
 * entities coming, going or changing roles can (a change set handles those one entity at a time).
 */
export interface PolicyRoleKeys {
  identityRoles: string;
  serviceRoles: string;
  postureCheckRoles: string;
}

interface PolicyRolesRow {
  id: string;
  semantic: string;
  identity_roles: string;
  service_roles: string;
  posture_check_roles: string;
}

const POLICY_ROLES_COLUMNS = 'id, semantic, identity_roles, service_roles, posture_check_roles';

function roleKeys(row: PolicyRolesRow): PolicyRoleKeys {
  return {
    identityRoles: `${row.semantic} ${row.identity_roles}`,
    serviceRoles: `${row.semantic} ${row.service_roles}`,
    postureCheckRoles: `${row.semantic} ${row.posture_check_roles}`,
  };
}

export async function readPolicyRoleKeys(q: Sql, id: string): Promise<PolicyRoleKeys | undefined> {
  const row = await q.get<PolicyRolesRow>(`SELECT ${POLICY_ROLES_COLUMNS} FROM service_policies WHERE id = ?`, [id]);
  return row && roleKeys(row);
}

export async function readAllPolicyRoleKeys(q: Sql): Promise<Map<string, PolicyRoleKeys>> {
  return new Map((await q.all<PolicyRolesRow>(`SELECT ${POLICY_ROLES_COLUMNS} FROM service_policies`)).map((r) => [r.id, roleKeys(r)]));
}

// ---- third-party CAs ---------------------------------------------------------------------------------------

/** A CA's certificate as a public key routers validate client certificates with (its first certificate). */
export function caPublicKey(certPem: string): PublicKeyModel | undefined {
  let der: Uint8Array | undefined;
  try {
    const first = parsePemBundle(certPem)[0];
    der = first === undefined ? undefined : certificateDer(first);
  } catch {
    der = undefined;
  }
  if (!der) return undefined;
  return { data: der, kid: keyId(der), usages: [PublicKeyUsage.ClientX509CertValidation], format: PublicKeyFormat.X509CertDer };
}

export async function readCaKey(q: Sql, id: string): Promise<PublicKeyModel | undefined> {
  const row = await q.get<{ cert_pem: string }>('SELECT cert_pem FROM cas WHERE id = ?', [id]);
  return row && caPublicKey(row.cert_pem);
}

export async function readCaKeys(q: Sql): Promise<Array<{ id: string; key: PublicKeyModel }>> {
  const out: Array<{ id: string; key: PublicKeyModel }> = [];
  for (const row of await q.all<{ id: string; cert_pem: string }>('SELECT id, cert_pem FROM cas ORDER BY id')) {
    const key = caPublicKey(row.cert_pem);
    if (key) out.push({ id: row.id, key });
  }
  return out;
}

// ---- revocations -------------------------------------------------------------------------------------------

export type RevocationModel = ProtoInput<DataStateRevocation>;

function timestampOf(iso: string): { seconds: bigint; nanos: number } {
  const ms = Date.parse(iso);
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
}

function revocationOf(row: { id: string; type: string; expires_at: string; issued_before: string | null }): RevocationModel {
  return { id: row.id, type: row.type, expiresAt: timestampOf(row.expires_at), ...(row.issued_before ? { issuedBefore: timestampOf(row.issued_before) } : {}) };
}

/** A revocation still in force (its tokens would not have expired yet). */
export async function readRevocation(q: Sql, id: string, now: Date): Promise<RevocationModel | undefined> {
  const row = await q.get<{ id: string; type: string; expires_at: string; issued_before: string | null }>(
    'SELECT id, type, expires_at, issued_before FROM revocations WHERE id = ? AND expires_at > ?',
    [id, now.toISOString()],
  );
  return row && revocationOf(row);
}

/** Every revocation still in force, oldest first. */
export async function readRevocations(q: Sql, now: Date): Promise<RevocationModel[]> {
  const rows = await q.all<{ id: string; type: string; expires_at: string; issued_before: string | null }>(
    'SELECT id, type, expires_at, issued_before FROM revocations WHERE expires_at > ? ORDER BY created_at, id',
    [now.toISOString()],
  );
  return rows.map(revocationOf);
}
