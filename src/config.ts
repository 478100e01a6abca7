/**
 * Controller configuration: command-line flags win over PORTCULLIS_* environment variables, which win over
 * defaults. One Config object is built at start and passed down; nothing else reads the environment.
 */
import { Command, InvalidArgumentError } from 'commander';
import { resolve } from 'node:path';
import { SERVER_KEY_TYPES, type ServerKeyType } from './pki/key-types.ts';
import { availableParallelism } from 'node:os';

export interface Config {
  dataDir: string;
  /**
   * PostgreSQL connection URL (`postgres://user:password@host:port/db?sslmode=...`); absent: the embedded SQLite
   * store in the data dir. The data dir still holds the PKI either way.
   */
  databaseUrl?: string;
  address: string;
  port: number;
  advertise: string;
  adminUser: string;
  /** Only used when the default admin is first created; undefined means "generate one". */
  adminPassword?: string;
  /** Idle timeout of an API session in milliseconds (upstream default 30 minutes). */
  apiSessionTimeoutMs: number;
  logLevel: string;
  /**
   * Type of the controller's TLS/JWT signing key when one is generated (first start, or the key file is
   * missing): 'ec' (P-256, ES256 JWTs) or 'rsa' (RSA-4096, RS256 JWTs, as an upstream quickstart PKI).
   * An existing key is always kept.
   */
  serverKeyType: ServerKeyType;
  /**
   * Worker processes serving the listener (node:cluster); 1 serves from this process alone. Read by the
   * entry point only: `startController` always runs one process.
   */
  workers: number;
  /** Most authentication requests admitted at once per process (adaptive below it; 0: no limit). */
  authLimit: number;
  /** Most state-changing requests admitted at once per process (adaptive below it; 0: no limit). */
  writeLimit: number;
  /** Seconds a client has to send its request headers (slow clients are cut off). */
  headerTimeout: number;
  /** Seconds a client has to send a whole request. */
  requestTimeout: number;
  /** Most open connections per process. */
  maxConnections: number;
  /**
   * Whether `/version` lists `OIDC_AUTH` (default true). Upstream v2 clients (Go SDK, `ziti` CLI, tunnelers) then log
   * in through `/oidc` and use JWT API sessions; older ones keep using zt-session. The `/oidc` routes are served
   * either way.
   */
  oidcAuth: boolean;
  /** Lifetimes of the tokens of an OIDC login, in seconds (upstream: 30 min, 24 h, 30 min). */
  oidcTokens: { accessTokenSeconds: number; refreshTokenSeconds: number; idTokenSeconds: number };
  /**
   * A file holding the secret every controller of a network sharing one PostgreSQL store is given: it protects the
   * keys they share (src/cluster/network.ts). Needed to join a network, and by its first controller to publish them.
   */
  clusterSecretFile?: string;
}

export const defaults = {
  dataDir: './data',
  address: '0.0.0.0',
  port: 1280,
  advertise: 'localhost',
  adminUser: 'admin',
  apiSessionTimeoutMs: 30 * 60 * 1000,
  logLevel: 'info',
  serverKeyType: 'ec',
  authLimit: 250,
  writeLimit: 250,
  headerTimeout: 10,
  requestTimeout: 60,
  maxConnections: 10_000,
} as const;

function parsePositive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000_000) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

function parseLimit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 100_000) throw new InvalidArgumentError('must be an integer 0-100000 (0: no limit)');
  return n;
}

/** `--workers` / PORTCULLIS_WORKERS: one worker process per core by default. */
function parseWorkers(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1024) throw new InvalidArgumentError('must be an integer 1-1024');
  return n;
}

function parseServerKeyType(value: string): ServerKeyType {
  if (!(SERVER_KEY_TYPES as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${SERVER_KEY_TYPES.join(', ')}`);
  return value as ServerKeyType;
}

/** A token lifetime from the environment: whole seconds, at least 10 (tests use short ones). */
function lifetimeSeconds(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 10 || n > 366 * 24 * 3600) throw new InvalidArgumentError(`${name} must be a whole number of seconds, 10 or more`);
  return n;
}

function parseSwitch(value: string): boolean {
  if (['1', 'true', 'yes', 'on'].includes(value.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off', ''].includes(value.toLowerCase())) return false;
  throw new InvalidArgumentError('must be true or false');
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('must be an integer 0-65535');
  return port;
}

/** PORTCULLIS_API_SESSION_TIMEOUT_SECONDS: idle timeout of API sessions (default 30 minutes). */
function sessionTimeoutMs(value: string | undefined): number {
  if (value === undefined || value === '') return defaults.apiSessionTimeoutMs;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 1) throw new InvalidArgumentError('PORTCULLIS_API_SESSION_TIMEOUT_SECONDS must be a number of seconds >= 1');
  return Math.round(seconds * 1000);
}

/**
 * Checks a `--database-url`: a postgres:// or postgresql:// URL with a host and a database name. The error names
 * what is wrong and never repeats the URL (it may hold a password).
 */
export function checkDatabaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('--database-url is not a URL (expected postgres://USER:PASSWORD@HOST:PORT/DATABASE)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new Error(`--database-url must start with postgres:// or postgresql:// (got ${url.protocol}//)`);
  }
  if (url.hostname === '' && !url.searchParams.has('host')) throw new Error('--database-url names no host');
  if (url.pathname.replace(/^\//, '') === '') throw new Error('--database-url names no database (…/DATABASE)');
  return value;
}

/** `text` with the password of any URL in it masked (`scheme://user:***@…`): for messages that repeat arguments. */
export function withoutPasswords(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^\s:@/]*:)[^\s@]*@/gi, '$1***@');
}

/** Builds the Config from argv (without node and script) and an environment. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): Config {
  const program = new Command('portcullis')
    .description('Portcullis: zero-trust overlay network controller (OpenZiti Edge API compatible)')
    .option('--data-dir <dir>', 'data directory (database, PKI)', env.PORTCULLIS_DATA_DIR ?? defaults.dataDir)
    // Checked after parsing, not by commander: its errors repeat the value, and this one may hold a password.
    // The environment's value is read after parsing, so that --help never shows it.
    .option('--database-url <url>', 'PostgreSQL store (postgres://USER:PASSWORD@HOST:PORT/DATABASE; or PORTCULLIS_DATABASE_URL); default: SQLite in the data dir')
    .option('--address <addr>', 'listen address', env.PORTCULLIS_ADDRESS ?? defaults.address)
    .option('--port <n>', 'listen port', parsePort, env.PORTCULLIS_PORT ? parsePort(env.PORTCULLIS_PORT) : defaults.port)
    .option('--advertise <host>', 'host name used in URLs, JWT issuers and the server certificate', env.PORTCULLIS_ADVERTISE ?? defaults.advertise)
    .option('--admin-user <name>', 'default admin user name (first start only)', env.PORTCULLIS_ADMIN_USER ?? defaults.adminUser)
    .option('--admin-password <pw>', 'default admin password (first start only; generated when absent)', env.PORTCULLIS_ADMIN_PASSWORD)
    .option(
      '--server-key-type <type>',
      'type of a newly generated server (TLS and JWT signing) key: ec or rsa',
      parseServerKeyType,
      env.PORTCULLIS_SERVER_KEY_TYPE ? parseServerKeyType(env.PORTCULLIS_SERVER_KEY_TYPE) : defaults.serverKeyType,
    )
    .option('--log-level <level>', 'log level (fatal, error, warn, info, debug, trace, silent)', env.PORTCULLIS_LOG_LEVEL ?? defaults.logLevel)
    .option(
      '--workers <n>',
      'worker processes sharing the listener (default: one per core; 1 = a single process)',
      parseWorkers,
      env.PORTCULLIS_WORKERS ? parseWorkers(env.PORTCULLIS_WORKERS) : availableParallelism(),
    )
    .option(
      '--auth-limit <n>',
      'most authentication requests admitted at once per process; the excess gets 429 (0: no limit)',
      parseLimit,
      env.PORTCULLIS_AUTH_LIMIT ? parseLimit(env.PORTCULLIS_AUTH_LIMIT) : defaults.authLimit,
    )
    .option(
      '--write-limit <n>',
      'most state-changing requests admitted at once per process; the excess gets 429 (0: no limit)',
      parseLimit,
      env.PORTCULLIS_WRITE_LIMIT ? parseLimit(env.PORTCULLIS_WRITE_LIMIT) : defaults.writeLimit,
    )
    .option(
      '--header-timeout <s>',
      'seconds a client has to send its request headers',
      parsePositive,
      env.PORTCULLIS_HEADER_TIMEOUT ? parsePositive(env.PORTCULLIS_HEADER_TIMEOUT) : defaults.headerTimeout,
    )
    .option(
      '--request-timeout <s>',
      'seconds a client has to send a whole request',
      parsePositive,
      env.PORTCULLIS_REQUEST_TIMEOUT ? parsePositive(env.PORTCULLIS_REQUEST_TIMEOUT) : defaults.requestTimeout,
    )
    .option(
      '--max-connections <n>',
      'most open connections per process',
      parsePositive,
      env.PORTCULLIS_MAX_CONNECTIONS ? parsePositive(env.PORTCULLIS_MAX_CONNECTIONS) : defaults.maxConnections,
    )
    .option(
      '--oidc-auth [on]',
      'list OIDC_AUTH in /version (default on), so upstream v2 clients log in through /oidc with JWT sessions; `--oidc-auth false` keeps them on zt-sessions (or PORTCULLIS_OIDC_AUTH)',
      parseSwitch,
      env.PORTCULLIS_OIDC_AUTH ? parseSwitch(env.PORTCULLIS_OIDC_AUTH) : true,
    )
    .option(
      '--cluster-secret-file <path>',
      'file with the secret shared by every controller on one PostgreSQL store (at least 32 characters); protects the keys they share (or PORTCULLIS_CLUSTER_SECRET_FILE)',
      env.PORTCULLIS_CLUSTER_SECRET_FILE || undefined,
    )
    .allowExcessArguments(false)
    .configureOutput({ outputError: (text, write) => write(withoutPasswords(text)) })
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const o = program.opts<Omit<Config, 'apiSessionTimeoutMs' | 'oidcTokens'>>();
  o.databaseUrl ??= env.PORTCULLIS_DATABASE_URL || undefined;
  if (o.databaseUrl !== undefined) checkDatabaseUrl(o.databaseUrl);
  return {
    ...o,
    oidcAuth: o.oidcAuth !== false,
    dataDir: resolve(o.dataDir),
    ...(o.clusterSecretFile !== undefined ? { clusterSecretFile: resolve(o.clusterSecretFile) } : {}),
    apiSessionTimeoutMs: sessionTimeoutMs(env.PORTCULLIS_API_SESSION_TIMEOUT_SECONDS),
    oidcTokens: {
      accessTokenSeconds: lifetimeSeconds('PORTCULLIS_OIDC_ACCESS_TOKEN_SECONDS', env.PORTCULLIS_OIDC_ACCESS_TOKEN_SECONDS, 30 * 60),
      refreshTokenSeconds: lifetimeSeconds('PORTCULLIS_OIDC_REFRESH_TOKEN_SECONDS', env.PORTCULLIS_OIDC_REFRESH_TOKEN_SECONDS, 24 * 3600),
      idTokenSeconds: lifetimeSeconds('PORTCULLIS_OIDC_ID_TOKEN_SECONDS', env.PORTCULLIS_OIDC_ID_TOKEN_SECONDS, 30 * 60),
    },
  };
}

