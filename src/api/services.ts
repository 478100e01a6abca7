/**
 * The set of domain services the API modules mount routes for. Built once in controller.ts.
 */
import type { EnrollMethod } from '../enrollment/enroll-method.ts';
import type { EnrollmentService } from '../enrollment/enrollment.service.ts';
import type { CaService } from '../resources/cas/ca.service.ts';
import type { CertificateExtension } from '../resources/authenticators/certificate-extension.ts';
import type { Store } from '../store/store.ts';
import type { IdentityService } from '../resources/identities/identity.service.ts';
import type { AuthenticatorService } from '../resources/authenticators/authenticator.service.ts';
import type { AuthenticationService } from '../auth/authentication.service.ts';
import type { ApiSessionService } from '../auth/api-session.service.ts';
import type { EntityService } from '../resources/entity-service.ts';
import type { SystemInfo } from '../system/system-info.ts';
import type { AccessService } from '../access/access.service.ts';
import type { ControllerService } from '../resources/controllers/controller.service.ts';
import type { PolicyService } from '../resources/policy-common.ts';
import type { PostureCheckService } from '../resources/posture-checks/posture-check.service.ts';
import type { PostureCheckTypeService } from '../resources/posture-check-types/posture-check-type.service.ts';
import type { ControllerPki } from '../pki/certificate-authority.ts';
import type { Membership } from '../cluster/membership.ts';
import type { EdgeRouterService } from '../resources/edge-routers/edge-router.service.ts';
import type { RouterService } from '../resources/routers/router.service.ts';
import type { TerminatorService } from '../resources/terminators/terminator.service.ts';
import type { SessionService } from '../resources/sessions/session.service.ts';
import type { ConfigTypeService } from '../resources/config-types/config-type.service.ts';
import type { ConfigService } from '../resources/configs/config.service.ts';
import type { ServiceEntityService } from '../resources/services/service.service.ts';
import type { ServiceViews } from '../resources/services/service-view.ts';
import type { ExternalJwtSignerService } from '../resources/external-jwt-signers/external-jwt-signer.service.ts';
import type { AuthPolicyService } from '../resources/auth-policies/auth-policy.service.ts';
import type { MfaService } from '../resources/mfa/mfa.service.ts';
import type { ApiSessionCertificateService } from '../resources/api-session-certificates/api-session-certificate.service.ts';
import type { IdentityTraces } from '../resources/identities/identity-trace.ts';
import type { FabricRouterService } from '../resources/routers/fabric-router.service.ts';
import type { LinkService } from '../resources/links/link.service.ts';
import type { CircuitService } from '../resources/circuits/circuit.service.ts';

import type { DatabaseOps } from '../resources/database/database-ops.ts';
import type { ControllerSettingService } from '../resources/controller-settings/controller-setting.service.ts';

import type { PostureService } from '../posture/posture.service.ts';

export interface Services {
  store: Store;
  /** Posture responses, posture data, refused session requests and posture enforcement. */
  posture: PostureService;
  /** Third-party CAs: CRUD, verification, and the trust pools of enrollment and cert login. */
  cas: CaService;
  /** The caller's certificate extension (extend, extend-verify). */
  certificateExtension: CertificateExtension;
  access: AccessService;
  identities: IdentityService;
  authenticators: AuthenticatorService;
  auth: AuthenticationService;
  apiSessions: ApiSessionService;
  /** Short-lived certificates of API sessions (`/current-api-session/certificates`). */
  apiSessionCertificates: ApiSessionCertificateService;
  /** Per-identity data-flow traces, in memory. */
  identityTraces: IdentityTraces;
  identityTypes: EntityService & { present: (v: Record<string, unknown>) => Record<string, unknown> };
  authPolicies: AuthPolicyService;
  /** TOTP MFA records of identities (enrollment, verification, recovery codes). */
  mfa: MfaService;
  configTypes: ConfigTypeService;
  configs: ConfigService;
  /** Edge services (CRUD) and their per-caller read model. */
  services: ServiceEntityService;
  serviceViews: ServiceViews;
  controllers: ControllerService;
  system: SystemInfo;
  servicePolicies: PolicyService;
  edgeRouterPolicies: PolicyService;
  serviceEdgeRouterPolicies: PolicyService;
  postureChecks: PostureCheckService;
  postureCheckTypes: PostureCheckTypeService;
  /** The controller's PKI: signs enrollment and session JWTs with the TLS server key. */
  pki: ControllerPki;
  /** The network's controllers (their keys are listed by `/enroll/jwks`); absent: this controller alone. */
  membership?: Pick<Membership, 'known'>;
  edgeRouters: EdgeRouterService;
  /** Every router, transit and edge, as `/routers` and `/transit-routers` show them. */
  routers: RouterService;
  terminators: TerminatorService;
  /** Routers as the fabric API shows them (with their control channels' live state). */
  fabricRouters: FabricRouterService;
  /** Services as the fabric API shows them. */
  fabricServices: EntityService & { present: (v: Record<string, unknown>) => Record<string, unknown> };
  /** Links between routers and circuits, as the router plane records them (fabric API, read-only). */
  links: LinkService;
  circuits: CircuitService;
  /** Sessions (dial/bind grants), the client's edge-router views and service-update marks. */
  sessions: SessionService;
  /** Enrollment strategies by wire name, served by the enroll routes. */
  enrollMethods: EnrollMethod[];
  /** Identity enrollments (create, refresh, delete, authenticator re-enroll) and the network JWT. */
  enrollments: EnrollmentService;
  /** External JWT signers (ext-jwt authentication and token enrollment). */
  externalJwtSigners: ExternalJwtSignerService;
  /** Data-integrity runs and snapshots. */
  database: DatabaseOps;
  /** The global and per-controller settings. */
  controllerSettings: ControllerSettingService;
}
