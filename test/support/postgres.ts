/**
 * A private PostgreSQL cluster for tests: initdb in a temporary directory, started on a free loopback port with
 * trust authentication for its own superuser `portcullis`, one database, stopped and removed at the end. The
 * server's programs come from PORTCULLIS_PG_BIN, else the newest Debian install (`/usr/lib/postgresql/<N>/bin`),
 * else the PATH. PostgreSQL refuses to run as root: under root the cluster belongs to the `postgres` system user
 * (created by Debian's package) and its programs run through `runuser`.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './controller.ts';

export interface TestPostgres {
  /** `postgres://portcullis@127.0.0.1:<port>/portcullis_test` */
  url: string;
  /**
   * Stops the server (`pg_ctl stop -m fast`: open connections are ended, committed data stays), keeping its data dir
   * and port; resolves once it is down. Runs in a child process: the event loop (and a controller in this process)
   * goes on meanwhile.
   */
  stopServer(): Promise<void>;
  /** The postmaster's pid while the server runs (its backends are its children). */
  serverPid(): number | undefined;
  /** Starts the server stopped by `stopServer` again, on the same port and data dir; resolves once it accepts connections. */
  startServer(): Promise<void>;
  /** Stops the server (if running) and removes the cluster. */
  stop(): Promise<void>;
  /** The server's port. */
  readonly port: number;
  /** Stops the server as a crash does (`pg_ctl stop -m immediate`: no shutdown checkpoint, clients cut). */
  crash(): Promise<void>;
  /**
   * A streaming replica of this server (pg_basebackup -R), started on a port of its own; `promote` makes it a
   * primary. Stop it with its own `stop`.
   */
  replica(): Promise<TestReplica>;
}

export interface TestReplica {
  port: number;
  url: string;
  promote(): Promise<void>;
  stop(): Promise<void>;
}

function serverBinaries(): string {
  if (process.env.PORTCULLIS_PG_BIN) return process.env.PORTCULLIS_PG_BIN;
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian).filter((v) => /^\d+$/.test(v) && existsSync(join(debian, v, 'bin', 'initdb')));
    versions.sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(debian, versions[0]!, 'bin');
  }
  const found = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).stdout.trim();
  if (found) return join(found, '..');
  throw new Error('PostgreSQL server programs (initdb, pg_ctl) were not found: install Debian\'s postgresql package or set PORTCULLIS_PG_BIN');
}

/**
 * `durable`: the server's defaults for durability (fsync, synchronous commit, full page writes), as an operator
 * runs it; benchmarks use it. Tests do without them (faster; nothing in a test outlives the machine).
 */
export async function startTestPostgres(opts: { durable?: boolean } = {}): Promise<TestPostgres> {
  const bin = serverBinaries();
  const asRoot = process.getuid?.() === 0;
  const serverDir = () => {
    const made = mkdtempSync(join(tmpdir(), 'portcullis-pg-'));
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(made, uid, gid);
    }
    return made;
  };
  const dir = serverDir();
  const run = (program: string, args: string[]) => {
    const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args];
    const result = spawnSync(command, argv, { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${program} failed (${result.status}): ${result.stderr || result.stdout}`);
  };
  /** `run` without blocking the event loop. */
  const runAsync = (program: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args];
      const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
      child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
      child.on('error', reject);
      child.on('close', (status) => (status === 0 ? resolve() : reject(new Error(`${program} failed (${status}): ${output}`))));
    });
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'portcullis', '--encoding=UTF8', '--locale=C.UTF-8', '--no-sync']);
  const port = await freePort();
  const relaxed = opts.durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off';
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1${relaxed} -c max_connections=400 -c shared_buffers=64MB`;
  const startArgs = ['-D', data, '-l', join(dir, 'server.log'), '-o', options, '-w', '-t', '60', 'start'];
  run('pg_ctl', startArgs);
  let running = true;
  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'portcullis', database: 'postgres' });
  await admin.connect();
  await admin.query('CREATE DATABASE portcullis_test');
  await admin.end();
  return {
    url: `postgres://portcullis@127.0.0.1:${port}/portcullis_test`,
    port,
    async crash() {
      await runAsync('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '60', 'stop']);
      running = false;
    },
    async replica() {
      const replicaDir = serverDir();
      const replicaData = join(replicaDir, 'data');
      await runAsync('pg_basebackup', ['-h', '127.0.0.1', '-p', String(port), '-U', 'portcullis', '-D', replicaData, '-R', '-X', 'stream', '--no-sync']);
      const replicaPort = await freePort();
      const replicaOptions = `-p ${replicaPort} -k ${replicaDir} -c listen_addresses=127.0.0.1${relaxed} -c max_connections=400 -c shared_buffers=64MB`;
      await runAsync('pg_ctl', ['-D', replicaData, '-l', join(replicaDir, 'server.log'), '-o', replicaOptions, '-w', '-t', '60', 'start']);
      return {
        port: replicaPort,
        url: `postgres://portcullis@127.0.0.1:${replicaPort}/portcullis_test`,
        promote: () => runAsync('pg_ctl', ['-D', replicaData, '-w', '-t', '60', 'promote']),
        async stop() {
          try {
            if (existsSync(join(replicaData, 'postmaster.pid'))) run('pg_ctl', ['-D', replicaData, '-m', 'immediate', '-w', 'stop']);
          } finally {
            rmSync(replicaDir, { recursive: true, force: true });
          }
        },
      };
    },
    serverPid() {
      try {
        return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
      } catch {
        return undefined;
      }
    },
    async stopServer() {
      if (!running) throw new Error('the test PostgreSQL server is not running');
      await runAsync('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
      running = false;
    },
    async startServer() {
      if (running) throw new Error('the test PostgreSQL server is running already');
      await runAsync('pg_ctl', startArgs);
      running = true;
    },
    async stop() {
      try {
        // (A server stopped by stopServer, and not started again, has no postmaster.pid left.)
        if (running || existsSync(join(data, 'postmaster.pid'))) run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        running = false;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
