/**
 * The OIDC clients the controller knows and the redirect URIs they may use. Upstream registers two public (native)
 * clients, `openziti` and the older `native`, identical but for their id: no secret, PKCE, the code flow and refresh.
 * Redirect URIs are matched as upstream's provider library does: the exact string, a registered pattern where `*`
 * stands for any run of characters within one path segment (so any port), or, for a loopback http(s) URI, any
 * registered loopback URI with the same path and query (RFC 8252 §7.3: native apps listen on a port of their own).
 */

export const OIDC_CLIENT_IDS = ['openziti', 'native'] as const;

export function isOidcClient(id: unknown): id is (typeof OIDC_CLIENT_IDS)[number] {
  return typeof id === 'string' && (OIDC_CLIENT_IDS as readonly string[]).includes(id);
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export const DEFAULT_REDIRECT_URIS: readonly string[] = [
  'openziti://auth/callback',
  'http://127.0.0.1:*/auth/callback',
  'https://127.0.0.1:*/auth/callback',
  'http://localhost:*/auth/callback',
  'https://localhost:*/auth/callback',
];

export const DEFAULT_POST_LOGOUT_URIS: readonly string[] = DEFAULT_REDIRECT_URIS.map((uri) => uri.replace(/\/auth\/callback$/, '/auth/logout'));

function patternOf(registered: string): RegExp {
  const escaped = registered.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*');
  return new RegExp(`^${escaped}$`);
}

function loopbackParts(uri: string): { path: string; query: string } | undefined {
  let url: URL;
  try {
    // A registered pattern's `*` port is not a URL; any digits stand in for it.
    url = new URL(uri.replace(/:\*(?=\/|$)/, ':1'));
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (url.username !== '' || url.password !== '' || url.hash !== '') return undefined;
  return { path: url.pathname, query: url.search };
}

/** Whether `uri` is one of `registered` (exactly, by pattern, or by the loopback rule). */
export function redirectUriAllowed(uri: string, registered: readonly string[]): boolean {
  if (uri === '' || uri.length > 2048) return false;
  for (const entry of registered) {
    if (entry === uri) return true;
    if (entry.includes('*') && patternOf(entry).test(uri)) return true;
  }
  const asked = loopbackParts(uri);
  if (!asked) return false;
  return registered.some((entry) => {
    const parts = loopbackParts(entry);
    return parts !== undefined && parts.path === asked.path && parts.query === asked.query;
  });
}
