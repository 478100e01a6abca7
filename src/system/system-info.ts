/**
 * What the informational operations report about this controller: version and API base URLs, the
 * capabilities it really implements, its own controller record, the served API documents, record counts
 * and the CA bundle. Built once at start from the config, the PKI and the mounted API definitions.
 */
import type { Db } from '../store/database.ts';
import { prepare } from '../store/entity-table.ts';

export const portcullisVersion = '0.1.0';

export interface SystemInfoSources {
  db: Db;
  advertise: string;
  port: number;
  instanceId: string;
  startedAt: Date;
  serverCertPem: string;
  serverCertFingerprint: string;
  caBundlePkcs7: string;
  /** The OpenAPI documents by spec id (`edge-client`, `edge-management`), built lazily. */
  documents: () => Record<string, Record<string, unknown>>;
}

/** Tables counted by `/summary`, under upstream's keys. */
const summaryTables: Record<string, string> = {
  apiSessions: 'api_sessions',
  authPolicies: 'auth_policies',
  authenticators: 'authenticators',
  configTypes: 'config_types',
  identities: 'identities',
  identityTypes: 'identity_types',
};

function hasTable(db: Db, name: string): boolean {
  return prepare(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

export function createSystemInfo(src: SystemInfoSources) {
  const base = `https://${src.advertise.includes(':') && !src.advertise.startsWith('[') ? `[${src.advertise}]` : src.advertise}:${src.port}`;
  const clientPath = '/edge/client/v1';
  const managementPath = '/edge/management/v1';
  const versionBody = {
    apiVersions: {
      edge: { v1: { apiBaseUrls: [base + clientPath], path: clientPath } },
      'edge-client': { v1: { apiBaseUrls: [base + clientPath], path: clientPath } },
      'edge-management': { v1: { apiBaseUrls: [base + managementPath], path: managementPath } },
    },
    buildDate: src.startedAt.toISOString().slice(0, 19).replace('T', ' '),
    // Capabilities change SDK behaviour (OIDC_AUTH switches them to OIDC); advertise only what exists.
    capabilities: [] as string[],
    revision: `portcullis-${portcullisVersion}`,
    runtimeVersion: process.version,
    version: `v${portcullisVersion}`,
  };
  const startedIso = src.startedAt.toISOString();

  return {
    version: () => versionBody,
    enumeratedCapabilities: () => ['OIDC_AUTH', 'HA_CONTROLLER'],
    protocols: () => ({ https: { address: `${src.advertise}:${src.port}` } }),
    caBundlePkcs7: () => src.caBundlePkcs7,
    specs: () =>
      ['edge-client', 'edge-management'].map((id) => ({
        _links: { self: { href: `./specs/${id}` }, spec: { href: `./specs/${id}/spec` } },
        createdAt: startedIso,
        id,
        tags: {},
        updatedAt: startedIso,
        name: id,
      })),
    specDocument: (id: string) => src.documents()[id],
    controller: (api: 'client' | 'management') => {
      const addresses: Record<string, Array<{ url: string; version: string }>> = {
        'edge-client': [{ url: base + clientPath, version: 'v1' }],
      };
      if (api === 'management') addresses['edge-management'] = [{ url: base + managementPath, version: 'v1' }];
      return {
        _links: { self: { href: `./controllers/${src.instanceId}` } },
        createdAt: startedIso,
        id: src.instanceId,
        tags: {},
        updatedAt: startedIso,
        apiAddresses: addresses,
        certPem: src.serverCertPem,
        ...(api === 'management' ? { ctrlAddress: null } : {}),
        fingerprint: src.serverCertFingerprint,
        isOnline: true,
        lastJoinedAt: startedIso,
        name: src.instanceId,
      };
    },
    summary: () => {
      const counts: Record<string, number> = {};
      for (const [key, table] of Object.entries(summaryTables)) {
        counts[key] = hasTable(src.db, table) ? (prepare(src.db, `SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n : 0;
      }
      counts.controllers = 1;
      return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
    },
  };
}

export type SystemInfo = ReturnType<typeof createSystemInfo>;
