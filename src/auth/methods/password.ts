/**
 * `method=password` (updb): looks the authenticator up by exact user name, refuses disabled identities and
 * auth policies that disallow passwords, and verifies the argon2id hash. Every failure is the same
 * 401 INVALID_AUTH so a caller cannot tell which part was wrong; an unknown user name still costs one
 * hash verification so timing does not tell either.
 */
import { ApiError } from '../../errors.ts';
import { decoyHash, verifyPassword } from '../password-hash.ts';
import type { AuthenticatorService } from '../../resources/authenticators/authenticator.service.ts';
import type { IdentityService } from '../../resources/identities/identity.service.ts';
import type { AuthMethod, AuthRequest } from './auth-method.ts';
import type { AuthPolicyReader } from '../auth-policy-reader.ts';

export function createPasswordMethod(deps: {
  authenticators: AuthenticatorService;
  identities: IdentityService;
  policies: AuthPolicyReader;
}): AuthMethod {
  return {
    name: 'password',
    async authenticate(req: AuthRequest) {
      const { username, password } = req.body;
      if (typeof username !== 'string' || typeof password !== 'string' || username === '' || password === '') {
        throw new ApiError('COULD_NOT_VALIDATE', { cause: { code: 'UNHANDLED', message: 'username and password fields are required' } });
      }
      const authenticator = deps.authenticators.findUpdbByUsername(username);
      if (!authenticator) {
        await verifyPassword(await decoyHash(), password);
        throw new ApiError('INVALID_AUTH');
      }
      const identity = deps.identities.summary(authenticator.identityId as string);
      const policy = identity ? deps.policies.primary(identity.authPolicyId) : undefined;
      const passwordOk = await verifyPassword(authenticator.passwordHash as string, password);
      if (!identity || identity.disabled || !policy || !policy.updb.allowed || !passwordOk) throw new ApiError('INVALID_AUTH');
      return { identityId: identity.id, authenticatorId: authenticator.id as string };
    },
  };
}
