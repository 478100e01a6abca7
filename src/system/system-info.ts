/**
 * What the informational operations report about this controller: version and API base URLs, the
 * capabilities it really implements, its own controller record, the served API documents, record counts
 * and the CA bundle. Built once at start from the config, the PKI and the mounted API definitions.
 */
import type { Store } from '../store/store.ts';

export const portcullisVersion = '0.1.0';
/**
 * The upstream release line whose APIs this controller serves, reported as `version`: consoles and routers
 * choose features by the controller's version. Portcullis' own name and version are in `revision`.
 */
export const compatibleUpstreamVersion = 'v2.0.0';

export interface SystemInfoSources {
  store: Store;
  advertise: string;
  port: number;
  startedAt: Date;
  caBundlePkcs7: string;
  /** Whether OIDC logins are advertised (`OIDC_AUTH`, the `edge-oidc` API). */
  oidcAuth?: boolean;
  /** The OpenAPI documents by spec id (`edge-client`, `edge-management`, `fabric`), built lazily. */
  documents: () => Record<string, Record<string, unknown>>;
}

/** Record types counted by `/summary`, under upstream's keys, with their tables (and a condition where needed). */
const summaryTables: Record<string, string> = {
  apiSessionCertificates: 'api_session_certificates',
  apiSessions: 'api_sessions',
  authPolicies: 'auth_policies',
  authenticators: 'authenticators',
  cas: 'cas',
  configTypes: 'config_types',
  configs: 'configs',
  controllers: 'controllers',
  edgeRouterPolicies: 'edge_router_policies',
  enrollments: 'enrollments',
  externalJwtSigners: 'external_jwt_signers',
  identities: 'identities',
  identityTypes: 'identity_types',
  mfas: 'mfas',
  postureCheckTypes: 'posture_check_types',
  postureChecks: 'posture_checks',
  routers: 'routers',
  'routers.edge': 'routers WHERE is_edge = 1',
  serviceEdgeRouterPolicies: 'service_edge_router_policies',
  servicePolicies: 'service_policies',
  services: 'services',
  'services.edge': 'services',
  sessions: 'sessions',
  terminators: 'terminators',
};

export const clientPath = '/edge/client/v1';
export const managementPath = '/edge/management/v1';
export const fabricPath = '/fabric/v1';

/** `https://<advertised host>:<port>`, with IPv6 hosts bracketed. */
export function advertisedBaseUrl(advertise: string, port: number): string {
  const host = advertise.includes(':') && !advertise.startsWith('[') ? `[${advertise}]` : advertise;
  return `https://${host}:${port}`;
}

/**
 * The five version fields the control channel carries (upstream's `version|revision|buildDate|os|arch`):
 * routers gate features on the version, so it is the upstream release Portcullis answers as.
 */
export function controllerVersionInfo(startedAt: Date): { version: string; revision: string; buildDate: string; os: string; arch: string } {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  return { version: compatibleUpstreamVersion, revision: `portcullis v${portcullisVersion}`, buildDate: startedAt.toISOString().slice(0, 19) + 'Z', os: process.platform, arch };
}

export function createSystemInfo(src: SystemInfoSources) {
  const base = advertisedBaseUrl(src.advertise, src.port);
  const versionBody = {
    apiVersions: {
      edge: { v1: { apiBaseUrls: [base + clientPath], path: clientPath } },
      'edge-client': { v1: { apiBaseUrls: [base + clientPath], path: clientPath } },
      'edge-management': { v1: { apiBaseUrls: [base + managementPath], path: managementPath } },
      // As upstream: its base URL lists no path for the fabric API (its binding-to-path helper has no fabric case).
      fabric: { v1: { apiBaseUrls: [base], path: fabricPath } },
      // The C SDK finds the OpenID provider here.
      ...(src.oidcAuth ? { 'edge-oidc': { v1: { apiBaseUrls: [base + '/oidc'], path: '/oidc' } } } : {}),
    },
    buildDate: src.startedAt.toISOString().slice(0, 19) + 'Z',
    // Capabilities change SDK behaviour (OIDC_AUTH switches them to OIDC); advertise only what is switched on.
    capabilities: src.oidcAuth ? ['OIDC_AUTH'] : ([] as string[]),
    revision: `portcullis v${portcullisVersion}`,
    runtimeVersion: process.version,
    version: compatibleUpstreamVersion,
  };
  const startedIso = src.startedAt.toISOString();

  return {
    version: () => versionBody,
    enumeratedCapabilities: () => ['OIDC_AUTH', 'HA_CONTROLLER'],
    protocols: () => ({ https: { address: `${src.advertise}:${src.port}` } }),
    caBundlePkcs7: () => src.caBundlePkcs7,
    /** The API documents listed by an API: the management API lists every one, the client API only its own. */
    specs: (api: 'client' | 'management') =>
      (api === 'client' ? ['edge-client'] : ['edge-client', 'edge-management', 'fabric']).map((id) => ({
        _links: { self: { href: `./specs/${id}` }, spec: { href: `./specs/${id}/spec` } },
        createdAt: startedIso,
        id,
        tags: {},
        updatedAt: startedIso,
        name: id,
      })),
    specDocument: (id: string) => src.documents()[id],
    summary: async () => {
      const counts: Record<string, number> = {};
      for (const [key, table] of Object.entries(summaryTables)) {
        counts[key] = (await src.store.value<number>(`SELECT COUNT(*) AS n FROM ${table}`)) ?? 0;
      }
      // Upstream also counts its queued change events and its token revocations. Writes here commit their
      // effects in their own transaction and no token is revoked by record (sessions are deleted), so both
      // stores are empty by construction.
      counts.eventualEvents = 0;
      counts.revocations = 0;
      return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
    },
  };
}

export type SystemInfo = ReturnType<typeof createSystemInfo>;
