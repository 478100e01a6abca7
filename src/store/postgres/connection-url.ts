/**
 * Reads a PostgreSQL URL (`postgres://user:password@host:port/database?sslmode=...`) into the driver's connection
 * settings, plus a description of where it points for messages and logs: `host:port/database as user`, never the
 * password. Errors are one line and never repeat the URL (it may hold the password).
 *
 * Query parameters understood: host (a socket directory or a host name), port, sslmode (disable, no-verify,
 * require, verify-ca, verify-full), sslrootcert, sslcert, sslkey, application_name, connect_timeout (seconds).
 */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import type { ConnectionOptions } from 'node:tls';
import type pg from 'pg';

export interface PostgresLocation {
  /** Host, port, user, password, database, ssl and application name for pg's Client/Pool. */
  config: pg.ClientConfig;
  /** `host:port/database as user`. */
  where: string;
  /** The password, to scrub from messages (undefined when the URL has none). */
  password?: string;
  /** connect_timeout from the URL, in milliseconds. */
  connectTimeoutMs?: number;
}

const USAGE = 'expected postgres://user:password@host:port/database';

function invalid(reason: string): Error {
  return new Error(`invalid PostgreSQL URL (${reason}): ${USAGE}`);
}

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw invalid(`bad percent-encoding in the ${what}`);
  }
}

function readPem(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the PostgreSQL ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
}

export function parsePostgresUrl(url: string): PostgresLocation {
  if (typeof url !== 'string' || !/^postgres(ql)?:\/\//i.test(url)) throw invalid('not a postgres:// URL');
  // libpq accepts an empty host after the user (`postgres://user@/db?host=/run/postgresql`); WHATWG URLs do not.
  const fixed = url.replace(/^(postgres(?:ql)?:\/\/[^/?#]*@)(?=[/?#]|$)/i, '$1localhost');
  let parsed: URL;
  try {
    parsed = new URL(fixed);
  } catch {
    throw invalid('malformed');
  }
  const params = parsed.searchParams;
  const known = new Set(['host', 'port', 'sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'application_name', 'connect_timeout']);
  for (const name of params.keys()) if (!known.has(name)) throw invalid(`unsupported parameter "${name}"`);

  const urlHost = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const host = params.get('host') || (urlHost && urlHost !== 'localhost' ? decode(urlHost, 'host') : '') || 'localhost';
  const portText = params.get('port') || parsed.port || '5432';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65535) throw invalid('bad port');
  const user = decode(parsed.username, 'user') || process.env.PGUSER || userInfo().username;
  const password = parsed.password ? decode(parsed.password, 'password') : undefined;
  const path = decode(parsed.pathname.replace(/^\//, ''), 'database name');
  if (path.includes('/')) throw invalid('bad database name');
  const database = path || process.env.PGDATABASE || user;

  let ssl: boolean | ConnectionOptions = false;
  const sslmode = params.get('sslmode') ?? 'disable';
  const rootCert = params.get('sslrootcert');
  const clientCert = params.get('sslcert');
  const clientKey = params.get('sslkey');
  switch (sslmode) {
    case 'disable':
      break;
    case 'no-verify':
      ssl = { rejectUnauthorized: false };
      break;
    case 'require':
      // As libpq: encrypted; the server is verified only against a given root certificate.
      ssl = rootCert ? { rejectUnauthorized: true, checkServerIdentity: () => undefined } : { rejectUnauthorized: false };
      break;
    case 'verify-ca':
      ssl = { rejectUnauthorized: true, checkServerIdentity: () => undefined };
      break;
    case 'verify-full':
      ssl = { rejectUnauthorized: true };
      break;
    default:
      throw invalid(`sslmode=${sslmode} is not supported (disable, no-verify, require, verify-ca or verify-full)`);
  }
  if (ssl !== false) {
    if (rootCert) ssl.ca = readPem(rootCert, 'sslrootcert');
    if (clientCert) ssl.cert = readPem(clientCert, 'sslcert');
    if (clientKey) ssl.key = readPem(clientKey, 'sslkey');
  }

  const timeoutText = params.get('connect_timeout');
  let connectTimeoutMs: number | undefined;
  if (timeoutText !== null) {
    if (!/^\d+$/.test(timeoutText)) throw invalid('bad connect_timeout');
    connectTimeoutMs = Number(timeoutText) * 1000 || undefined;
  }

  const config: pg.ClientConfig = { host, port, user, database, ssl };
  if (password !== undefined) config.password = password;
  const applicationName = params.get('application_name');
  if (applicationName) config.application_name = applicationName;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return { config, where: `${shownHost}:${port}/${database} as ${user}`, password, connectTimeoutMs };
}

/** A driver message as one line without the password. */
export function scrub(message: string, password: string | undefined): string {
  let line = message.replace(/\s+/g, ' ').trim();
  if (password && password.length >= 3) line = line.split(password).join('***');
  return line;
}
