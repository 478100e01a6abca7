/**
 * The composition root: opens the store, loads or creates the PKI, seeds first-start records, builds every
 * service and the HTTPS server, and stops them in the right order. The only place that wires things.
 */
import { availableParallelism } from 'node:os';
import { configurePasswordHashing } from './auth/password-hash.ts';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { Store } from './store/store.ts';
import { migrateStore, openStore } from './store/open-store.ts';
import type { ControllerPki } from './pki/certificate-authority.ts';
import { verifiedCertificateFingerprint } from './pki/fingerprint.ts';
import { certsToPkcs7Base64 } from './pki/pkcs7.ts';
import { buildServer } from './http/server.ts';
import { oidcRoutes } from './oidc/oidc.routes.ts';
import { createAuthRequests } from './oidc/auth-requests.ts';
import { createOidcTokens, DEFAULT_LIFETIMES } from './oidc/tokens.ts';
import { accessTokenOf, createBearerResolver } from './oidc/bearer.ts';
import { buildOpenApiDocument } from './http/openapi.ts';
import { createEntityService, systemClock, type Clock } from './resources/entity-service.ts';
import { createIdentityService } from './resources/identities/identity.service.ts';
import { createAccessService, registerMembershipTables, type AccessService } from './access/access.service.ts';
import { createAuthenticatorService } from './resources/authenticators/authenticator.service.ts';
import { identityTypeResource } from './resources/identity-types/identity-type.resource.ts';
import { createConfigTypeService } from './resources/config-types/config-type.service.ts';
import { createConfigService } from './resources/configs/config.service.ts';
import { createServiceService } from './resources/services/service.service.ts';
import { createServiceViews } from './resources/services/service-view.ts';
import { createApiSessionService } from './auth/api-session.service.ts';
import { createAuthenticationService } from './auth/authentication.service.ts';
import { createAuthPolicyReader } from './auth/auth-policy-reader.ts';
import { createPasswordMethod } from './auth/methods/password.ts';
import { createCertMethod } from './auth/methods/cert.ts';
import { createSecondaryFactors } from './auth/secondary-factors.ts';
import { createMfaService } from './resources/mfa/mfa.service.ts';
import { createAuthPolicyService } from './resources/auth-policies/auth-policy.service.ts';
import { createApiSessionCertificateService } from './resources/api-session-certificates/api-session-certificate.service.ts';
import { createIdentityTraces } from './resources/identities/identity-trace.ts';
import { createCaService } from './resources/cas/ca.service.ts';
import { createCertificateExtension } from './resources/authenticators/certificate-extension.ts';
import { createOttcaEnrollMethod } from './enrollment/methods/ottca.ts';
import { createCaEnrollMethod } from './enrollment/methods/ca.ts';
import { createExtJwtMethod } from './auth/methods/ext-jwt.ts';
import { createSignerTokens } from './resources/external-jwt-signers/signer-tokens.ts';
import { createExternalJwtSignerService } from './resources/external-jwt-signers/external-jwt-signer.service.ts';
import { createTokenEnrollMethod } from './enrollment/methods/token.ts';
import { bootstrapRecords, type AdminCredentials } from './system/bootstrap.ts';
import { startNetwork, type ControllerSession, type NetworkStart } from './cluster/network.ts';
import { newOrigin } from './cluster/change-feed.ts';
import { advertisedBaseUrl, clientPath, controllerVersionInfo, createSystemInfo, fabricPath, managementPath, portcullisVersion } from './system/system-info.ts';
import { createControllerService } from './resources/controllers/controller.service.ts';
import { createEdgeRouterService } from './resources/edge-routers/edge-router.service.ts';
import { createRouterService } from './resources/routers/router.service.ts';
import { createRouterEnrollments } from './resources/routers/router-enrollment.ts';
import { createTerminatorService } from './resources/terminators/terminator.service.ts';
import { createFabricRouterService } from './resources/routers/fabric-router.service.ts';
import { fabricServiceResource } from './resources/services/fabric-service.resource.ts';
import { createLinkService } from './resources/links/link.service.ts';
import { createCircuitService } from './resources/circuits/circuit.service.ts';
import { createSessionService } from './resources/sessions/session.service.ts';
import { createPostureService } from './posture/posture.service.ts';
import { managementApi } from './api/management.ts';
import { clientApi } from './api/client.ts';
import { fabricApi } from './api/fabric.ts';
import { versionRoutes, cacertsRoute, fabricRootRoute } from './system/system.routes.ts';
import type { EnrollMethod } from './enrollment/enroll-method.ts';
import { createRouterEnrollMethods } from './enrollment/methods/router.ts';
import { createEnrollmentService } from './enrollment/enrollment.service.ts';
import { createOttEnrollMethod } from './enrollment/methods/ott.ts';
import { createUpdbEnrollMethod } from './enrollment/methods/updb.ts';
import type { Services } from './api/services.ts';
import type { ApiDefinition } from './http/route.ts';
import type { Resource } from './resources/define-resource.ts';
import { createPolicyService } from './resources/policy-common.ts';
import { servicePolicyResource } from './resources/service-policies/service-policy.resource.ts';
import { edgeRouterPolicyResource } from './resources/edge-router-policies/edge-router-policy.resource.ts';
import { serviceEdgeRouterPolicyResource } from './resources/service-edge-router-policies/service-edge-router-policy.resource.ts';
import { createPostureCheckService } from './resources/posture-checks/posture-check.service.ts';
import { createPostureCheckTypeService } from './resources/posture-check-types/posture-check-type.service.ts';
import { abandonIntegrityRun, createDatabaseOps, resetDatabaseOps } from './resources/database/database-ops.ts';
import { createFabric, type Fabric, type FabricOptions } from './fabric/fabric.ts';
import { loneBus, type FabricBus } from './fabric/bus.ts';
import { admissionSettings } from './http/admission.ts';
import type { FabricAccess } from './fabric/service-access.ts';
import { createPostureEvaluator, type PostureEvaluator } from './posture/posture-evaluator.ts';
import { clearLiveRouters, clearLiveRoutersOf, createLiveRouters } from './fabric/live-routers.ts';
import { createChangeFeed } from './cluster/change-feed.ts';
import { soleMembership, type Membership } from './cluster/membership.ts';
import { createControllerSettingService } from './resources/controller-settings/controller-setting.service.ts';

export interface RunningController {
  app: FastifyInstance;
  store: Store;
  pki: ControllerPki;
  admin: AdminCredentials;
  /** The port actually bound (useful with --port 0). */
  port: number;
  /** The domain services behind the APIs (in-process tooling, e.g. benchmark dataset loading). */
  services: Services;
  /** The controllers of the network and who leads (src/cluster/membership.ts). */
  membership: Membership;
  stop(): Promise<void>;
}

/** The id of each API's OpenAPI document (`/specs/<id>/spec`). */
const specIds: Record<ApiDefinition['name'], string> = { client: 'edge-client', management: 'edge-management', fabric: 'fabric' };

function plainService(resource: Resource, store: Store) {
  const service = createEntityService(resource, store);
  return { ...service, present: resource.presentStored };
}

function certificateInspector() {
  return { fingerprint: verifiedCertificateFingerprint };
}

export interface StartOptions {
  /**
   * False in a cluster worker other than the first of the start: that one ran `prepareDataDir` (migrations,
   * PKI, first-start records, per-start shared state) before the others open the store (src/cluster/).
   * Default true: one process does it all.
   */
  firstStart?: boolean;
  /** Called once `prepareDataDir` is done (first start only), before the rest of the start. */
  onPrepared?: () => void;
  /** Cluster worker id, sent as the `x-portcullis-worker` response header. */
  workerId?: string;
  /** This process's name in the change feed and as owner of an integrity run (random by default). */
  origin?: string;
  /** How this process reaches the routers other processes hold (cluster workers); alone by default. */
  bus?: FabricBus;
  /** The time records and API session expiry are computed with: the system clock unless a test moves its own. */
  clock?: Clock;
  /**
   * Control-channel deadlines, bounds and log instead of the defaults (tests: short deadlines, small bounds, log lines
   * read back), and the membership the fabric sees (tests: a network of controllers around this one).
   */
  fabric?: Partial<Pick<FabricOptions, 'timings' | 'bounds' | 'helloTimeoutMs' | 'log' | 'membership' | 'pollIntervalMs'>>;
}

/** Work done once per controller start, before any process serves: schema, network and PKI, first-start records. */
export async function prepareDataDir(
  store: Store,
  config: Config,
  origin: string = newOrigin(),
): Promise<{ admin: AdminCredentials; pki: ControllerPki; network: NetworkStart }> {
  await migrateStore(store);
  const network = await startNetwork(store, config, { origin, firstStart: true });
  try {
    const admin = await bootstrapRecords(store, { username: config.adminUser, password: config.adminPassword });
    // Live rows and an integrity run left by an earlier start are dropped, unless other controllers of the network
    // are alive (they are theirs then; the leader drops those of processes that are gone, src/cluster/network.ts).
    if (!(await network.session?.othersAlive())) {
      await resetDatabaseOps(store);
      await clearLiveRouters(store);
    }
    return { admin, pki: network.pki, network };
  } catch (err) {
    await network.session?.close();
    throw err;
  }
}

/** The access answers routers' requests get: the REST side's, from the same index and posture evaluator. */
function fabricAccess(access: AccessService, posture: PostureEvaluator): FabricAccess {
  return {
    catchUp: async () => {
      await access.catchUp();
    },
    async mayUse(identityId, apiSessionId, serviceId, type) {
      const perms = access.index.identityServices(identityId).permissions(serviceId);
      if (type === 'Dial' ? !perms.dial : !perms.bind) return false;
      try {
        await posture.assertSessionAllowed(identityId, apiSessionId, serviceId, type);
        return true;
      } catch {
        return false;
      }
    },
    routerAllowed: (identityId, serviceId, routerId) =>
      access.index.edgeRouterSet('service', serviceId).has(routerId) && access.index.edgeRouterSet('identity', identityId).has(routerId),
    membership: () => access.index,
    policyPermissions: (identityId, serviceId) => access.index.identityServices(identityId).permissions(serviceId),
  };
}

export async function startController(config: Config, options: StartOptions = {}): Promise<RunningController> {
  // Hash no more passwords at once than this process's share of the cores (src/auth/password-hash.ts).
  configurePasswordHashing({ concurrency: availableParallelism() / Math.max(1, config.workers) });
  const store = await openStore(config);
  let session: ControllerSession | undefined;
  let clusterMembership: (Membership & { stop(): Promise<void> }) | undefined;
  // Cluster membership logs through the server's logger once there is one (its first check runs before).
  let logTo: Pick<FastifyInstance['log'], 'info' | 'warn'> | undefined;
  const lateLog = { info: (obj: object, msg: string) => logTo?.info(obj, msg), warn: (obj: object, msg: string) => logTo?.warn(obj, msg) };
  try {
    const origin = options.origin ?? newOrigin();
    const { pki, admin, network } =
      options.firstStart === false
        ? await startNetwork(store, config, { origin, firstStart: false }).then((network) => ({
            pki: network.pki,
            network,
            admin: { username: config.adminUser, created: false } as AdminCredentials,
          }))
        : await prepareDataDir(store, config, origin);
    session = network.session;
    if (options.firstStart !== false) options.onPrepared?.();
    const instanceId = network.controllerId;

    const clock = options.clock ?? systemClock;
    // The change feed keeps this process's in-memory state in step with writes of other worker processes.
    // Model rows commit in seq order (src/cluster/change-feed.ts): a missing seq is one a rolled-back write used, not
    // a row still to come, so none is waited for.
    // Work that must run once in the network runs in its leader's process (every process when alone on SQLite).
    const leads = () => clusterMembership?.isLeader() ?? true;
    const feed = createChangeFeed(store, { origin, probe: store.commitMark, gapWaitMs: 0, leads });
    const access = createAccessService(store, clock, feed);
    await access.load();
    registerMembershipTables(store, access);
    const base = advertisedBaseUrl(config.advertise, config.port);
    // Where routers and SDKs reach the control channel, named in enrollment JWTs: it shares the API port (routers
    // ask for it by ALPN).
    const ctrlAddress = `tls:${new URL(base).host}`;
    const controllers = createControllerService(store);
    if (session) {
      const holder = await session.liveWithAddress(ctrlAddress);
      if (holder !== undefined) {
        throw new Error(`controller ${holder} is running with the same control address ${ctrlAddress}: give each controller its own --advertise and --port`);
      }
    }
    await controllers.register({
      id: instanceId,
      ctrlAddress,
      certPem: pki.serverCertPem,
      fingerprint: pki.serverCertFingerprint,
      apiAddresses: {
        'edge-client': [{ url: base + clientPath, version: 'v1' }],
        'edge-management': [{ url: base + managementPath, version: 'v1' }],
        fabric: [{ url: base + fabricPath, version: 'v1' }],
        ...(config.oidcAuth ? { 'edge-oidc': [{ url: base + '/oidc', version: 'v1' }] } : {}),
      },
    });
    // The controllers of the network (src/cluster/membership.ts): read by enrollments, the fabric and the JWT keyring.
    const self = { id: instanceId, ctrlAddress, certPem: pki.serverCertPem, fingerprint: pki.serverCertFingerprint };
    const membership: Membership = session
      ? (clusterMembership = await session.membership(self, network.networkId, {
          log: lateLog,
          clearProcess: async (gone) => {
            await abandonIntegrityRun(store, gone);
            await clearLiveRoutersOf(store, gone);
          },
        }))
      : soleMembership(self, network.networkId);
    const enrollments = createEnrollmentService({ store, pki, issuer: base, membership, clock });
    const identities = createIdentityService(store, access, clock, enrollments);
    const configTypes = createConfigTypeService(store, clock);
    const configs = createConfigService(store, access, configTypes, clock);
    const edgeServices = createServiceService(store, access, clock);
    const serviceViews = createServiceViews(store, access, clock);
    const authenticators = createAuthenticatorService(store, certificateInspector(), clock);
    const cas = createCaService({ store, signer: pki, issuer: base, clock });
    // The logger exists once the server is built, before any request can fetch a JWKS.
    const signerTokens = createSignerTokens(store, { now: () => clock.now().getTime(), log: { warn: (obj, msg) => app.log.warn(obj, msg) } });
    const seal = network.seal;
    const apiSessions = createApiSessionService({ store, clock, timeoutMs: config.apiSessionTimeoutMs, seal, leads });
    const apiSessionCertificates = createApiSessionCertificateService({ store, pki, apiSessions, clock, trustDomain: new URL(base).hostname });
    const mfa = createMfaService(store, clock);
    const auth = createAuthenticationService({
      store,
      clock,
      identities,
      apiSessions,
      secondary: createSecondaryFactors({ store, policies: createAuthPolicyReader(store), signers: signerTokens }),
      mfaEnabled: (identityId) => mfa.isEnabled(identityId),
      methods: [
        createPasswordMethod({ authenticators, identities, policies: createAuthPolicyReader(store), store, clock }),
        createCertMethod({ store, caBundlePem: pki.caBundlePem, cas, identities, policies: createAuthPolicyReader(store), clock, sessionCertificates: apiSessionCertificates }),
        createExtJwtMethod({ store, signers: signerTokens, identities, policies: createAuthPolicyReader(store) }),
      ],
    });

    const startedAt = new Date();
    let documents: Record<string, Record<string, unknown>> | undefined;
    const apis: ApiDefinition[] = [];
    const system = createSystemInfo({
      store,
      advertise: config.advertise,
      port: config.port,
      startedAt,
      caBundlePkcs7: certsToPkcs7Base64(pki.caCertPems),
      oidcAuth: config.oidcAuth,
      documents: () =>
        (documents ??= Object.fromEntries(
          apis.map((api) => [
            specIds[api.name],
            buildOpenApiDocument(api, portcullisVersion, `${config.advertise}:${config.port}`),
          ]),
        )),
    });

    // Terminators stored before their source controller was recorded were created through this one.
    await store.write((tx) => tx.run('UPDATE terminators SET source_ctrl = ? WHERE source_ctrl IS NULL', [instanceId]));

    const liveRouters = createLiveRouters(store, feed.origin, membership.controllerId);
    const routerEnrollments = createRouterEnrollments({ pki, issuer: base, membership, clock });
    // Each enrollment method registers here; the enroll routes dispatch on the wire name.
    const enrollMethods: EnrollMethod[] = [];
    enrollMethods.push(createOttcaEnrollMethod({ store, cas, clock }), createCaEnrollMethod({ store, cas, access, clock }));
    enrollMethods.push(createTokenEnrollMethod({ store, access, signers: signerTokens, pki, clock }));
    enrollMethods.push(...createRouterEnrollMethods({ store, pki, clock }));
    enrollMethods.push(createOttEnrollMethod({ store, pki, clock }), createUpdbEnrollMethod({ store, clock }));

    const services: Services = {
      store,
      posture: createPostureService({ store, access, clock, leads }),
      cas,
      certificateExtension: createCertificateExtension({ store, pki, clock }),
      enrollMethods,
      enrollments,
      externalJwtSigners: createExternalJwtSignerService(store, clock),
      access,
      identities,
      authenticators,
      auth,
      apiSessions,
      apiSessionCertificates,
      identityTraces: createIdentityTraces(clock),
      identityTypes: plainService(identityTypeResource, store),
      authPolicies: createAuthPolicyService(store, clock),
      mfa,
      configTypes,
      configs,
      services: edgeServices,
      serviceViews,
      controllers,
      system,
      pki, membership,
      edgeRouters: createEdgeRouterService({ store, access, enrollments: routerEnrollments, liveRouters: liveRouters.current, clock }),
      routers: createRouterService({ store, access, enrollments: routerEnrollments, liveRouters: liveRouters.current, clock }),
      terminators: createTerminatorService(store, instanceId, clock),
      fabricRouters: createFabricRouterService({ store, liveRouters: liveRouters.current }),
      fabricServices: plainService(fabricServiceResource, store),
      links: createLinkService(store),
      circuits: createCircuitService(store),
      servicePolicies: createPolicyService('servicePolicy', servicePolicyResource, store, access, clock),
      edgeRouterPolicies: createPolicyService('edgeRouterPolicy', edgeRouterPolicyResource, store, access, clock),
      serviceEdgeRouterPolicies: createPolicyService('serviceEdgeRouterPolicy', serviceEdgeRouterPolicyResource, store, access, clock),
      postureChecks: createPostureCheckService(store, access, clock),
      postureCheckTypes: createPostureCheckTypeService(store),
      sessions: createSessionService({ store, access, signer: pki, membership, issuer: base, clock, startedAt }),
      database: createDatabaseOps({ store, access, clock, owner: feed.origin }),
      controllerSettings: createControllerSettingService(store, clock),
    };
    apis.push(clientApi(services), managementApi(services), fabricApi(services));

    const oidcTokens = createOidcTokens(pki, config.oidcTokens ?? DEFAULT_LIFETIMES, () => clock.now().getTime());
    const bearer = createBearerResolver({ key: pki, membership, auth, clock });
    const oidc = oidcRoutes({
      store,
      clock,
      key: pki, membership,
      serverCertPem: pki.serverCertPem,
      advertisedHost: new URL(base).host,
      auth,
      apiSessions,
      mfa,
      authRequests: createAuthRequests(store, clock),
      tokens: oidcTokens,
    });

    let fabric: Fabric | undefined;
    const app = buildServer({
      tls: { key: pki.serverKeyPem, cert: pki.serverChainPem },
      logLevel: config.logLevel,
      apis,
      rootRoutes: { name: 'client', prefix: '', title: 'root', routes: [...versionRoutes(system, 'root'), cacertsRoute(system, 'root'), fabricRootRoute(system)] },
      resolveSession: (token, req) => auth.resolveCaller(token, req.headers),
      resolveBearer: (req) => {
        const token = accessTokenOf(req.headers);
        return token === undefined ? undefined : bearer.resolve(token, req.headers);
      },
      extraRoutes: oidc,
      instanceId,
      serverHeader: `portcullis/${portcullisVersion}`,
      onRequest: (req, reply) => {
        if (options.workerId !== undefined) reply.header('x-portcullis-worker', options.workerId);
        // Management and fabric reads see every write acknowledged before them, whichever process made it: where
        // the store learns of other processes' commits by notice (PostgreSQL), they check the store itself. The
        // client API's hot reads may lag a commit by the notice's delay.
        if (store.markStale && !req.url.startsWith(clientPath)) store.markStale();
        // Read-your-writes across workers: apply what other processes committed before answering.
        return access.catchUp() || undefined;
      },
      admission: admissionSettings(config.authLimit, config.writeLimit),
      limits: { headersTimeoutMs: config.headerTimeout * 1000, requestTimeoutMs: config.requestTimeout * 1000, maxConnections: config.maxConnections },
      controlChannel: (socket) => (fabric ? fabric.accept(socket) : socket.destroy()),
      durable: () => store.durable(),
    });
    fabric = createFabric({
      store,
      caBundlePem: pki.caBundlePem,
      signingCertPem: pki.serverCertPem,
      seal,
      apiSessions,
      signer: pki,
      access: fabricAccess(access, createPostureEvaluator({ store, access, clock })),
      membership,
      controllerVersion: controllerVersionInfo(startedAt),
      live: liveRouters,
      owner: feed.origin,
      bus: options.bus ?? loneBus(feed.origin),
      log: app.log,
      ...options.fabric,
    });
    logTo = app.log;
    await app.listen({ host: config.address, port: config.port });
    apiSessions.start();
    services.posture.start();
    feed.start();
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;

    let stopped = false;
    return {
      app,
      store,
      pki,
      admin,
      port,
      services,
      membership,
      async stop() {
        if (stopped) return;
        stopped = true;
        fabric?.close();
        await app.close();
        await services.database.idle();
        await apiSessions.stop();
        services.posture.stop();
        feed.stop();
        // The locks go first, so the leader sees this controller gone as it is marked offline.
        await clusterMembership?.stop();
        await session?.close();
        await controllers.markOffline(instanceId);
        await store.close();
      },
    };
  } catch (err) {
    await clusterMembership?.stop();
    await session?.close();
    await store.close();
    throw err;
  }
}
