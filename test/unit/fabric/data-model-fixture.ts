/**
 * A store with the resource services the REST side uses (so the access service's feed rows and the store
 * triggers are the real ones), a router data model over it, and (test/support/router-model.ts) a simulated router
 * model that applies what it gets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore, type SqliteStore } from '../../../src/store/sqlite-store.ts';
import { migrate } from '../../../src/store/migrate.ts';
import { bootstrapRecords } from '../../../src/system/bootstrap.ts';
import { createChangeFeed, type ChangeFeed } from '../../../src/cluster/change-feed.ts';
import { createAccessService, type AccessService } from '../../../src/access/access.service.ts';
import { createIdentityService } from '../../../src/resources/identities/identity.service.ts';
import { createConfigTypeService } from '../../../src/resources/config-types/config-type.service.ts';
import { createConfigService } from '../../../src/resources/configs/config.service.ts';
import { createServiceService } from '../../../src/resources/services/service.service.ts';
import { createPolicyService } from '../../../src/resources/policy-common.ts';
import { servicePolicyResource } from '../../../src/resources/service-policies/service-policy.resource.ts';
import { createPostureCheckService } from '../../../src/resources/posture-checks/posture-check.service.ts';
import { createRouterDataModel, type RouterDataModelOptions } from '../../../src/fabric/data-model/router-data-model.ts';
export { Inbox, SimRouter, decodeReceived, type Received } from '../../support/router-model.ts';

export const silentLog = { info() {}, warn() {}, debug() {} };

export interface Store {
  store: SqliteStore;
  dir: string;
  feed: ChangeFeed;
  access: AccessService;
  identities: ReturnType<typeof createIdentityService>;
  configTypes: ReturnType<typeof createConfigTypeService>;
  configs: ReturnType<typeof createConfigService>;
  services: ReturnType<typeof createServiceService>;
  policies: ReturnType<typeof createPolicyService>;
  postureChecks: ReturnType<typeof createPostureCheckService>;
  close(): Promise<void>;
}

export async function openStore(): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), 'portcullis-rdm-'));
  const store = openSqliteStore(join(dir, 'portcullis.db'));
  migrate(store.db);
  await bootstrapRecords(store, { username: 'admin', password: 'admin-password' });
  return storeOn(store, dir);
}

/** Another process on the same database file (its own store and connections, feed origin and access index). */
export function otherProcess(store: Store): Promise<Store> {
  return storeOn(openSqliteStore(join(store.dir, 'portcullis.db')), undefined);
}

async function storeOn(store: SqliteStore, dir: string | undefined): Promise<Store> {
  const clock = { now: () => new Date() };
  const feed = createChangeFeed(store);
  const access = createAccessService(store, clock, feed);
  await access.load();
  const configTypes = createConfigTypeService(store, clock);
  return {
    store,
    dir: dir ?? '',
    feed,
    access,
    identities: createIdentityService(store, access, clock),
    configTypes,
    configs: createConfigService(store, access, configTypes, clock),
    services: createServiceService(store, access, clock),
    policies: createPolicyService('servicePolicy', servicePolicyResource, store, access, clock),
    postureChecks: createPostureCheckService(store, access, clock),
    async close() {
      await store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const HOST_V1 = 'NH5p4FpGR';

export function identity(store: Store, name: string, roleAttributes: string[] = [], extra: Record<string, unknown> = {}): Promise<string> {
  return store.identities.create({ name, type: 'Default', isAdmin: false, roleAttributes, ...extra });
}

export function service(store: Store, name: string, roleAttributes: string[] = [], extra: Record<string, unknown> = {}): Promise<string> {
  return store.services.create({ name, encryptionRequired: true, roleAttributes, ...extra });
}

export function policy(store: Store, name: string, type: 'Dial' | 'Bind', identityRoles: string[], serviceRoles: string[], postureCheckRoles: string[] = []): Promise<string> {
  return store.policies.create({ name, type, semantic: 'AnyOf', identityRoles, serviceRoles, postureCheckRoles });
}

const NO_KEYS: never[] = [];

export function dataModel(store: Store, options: Partial<RouterDataModelOptions> = {}) {
  return createRouterDataModel({
    store: store.store,
    access: { catchUp: () => store.access.catchUp() || undefined, membership: () => store.access.index },
    controllerKeys: () => NO_KEYS,
    timelineId: 'timeline-1',
    log: silentLog,
    ...options,
  });
}

