/**
 * The set of domain services the API modules mount routes for. Built once in controller.ts.
 */
import type { Db } from '../store/database.ts';
import type { IdentityService } from '../resources/identities/identity.service.ts';
import type { AuthenticatorService } from '../resources/authenticators/authenticator.service.ts';
import type { AuthenticationService } from '../auth/authentication.service.ts';
import type { ApiSessionService } from '../auth/api-session.service.ts';
import type { EntityService } from '../resources/entity-service.ts';
import type { SystemInfo } from '../system/system-info.ts';
import type { AccessService } from '../access/access.service.ts';
import type { ControllerService } from '../resources/controllers/controller.service.ts';

export interface Services {
  db: Db;
  access: AccessService;
  identities: IdentityService;
  authenticators: AuthenticatorService;
  auth: AuthenticationService;
  apiSessions: ApiSessionService;
  identityTypes: EntityService & { present: (v: Record<string, unknown>) => Record<string, unknown> };
  authPolicies: EntityService & { present: (v: Record<string, unknown>) => Record<string, unknown> };
  configTypes: EntityService & { present: (v: Record<string, unknown>) => Record<string, unknown> };
  controllers: ControllerService;
  system: SystemInfo;
}
