/**
 * Test harness: starts a real controller on a free loopback port with a temporary data dir, logs in as
 * the default admin, and stops and removes everything when the test file ends. Call it with top-level
 * `await` in the test module (not inside a `before` hook): its `after` cleanup must attach to the file's
 * root test, not to a hook.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { after } from 'node:test';
import { startController, type RunningController, type StartOptions } from '../../src/controller.ts';
import { loadConfig } from '../../src/config.ts';
import { createClient, type HttpClient } from './client.ts';

export const ADMIN_USER = 'admin';
export const ADMIN_PASSWORD = 'admin-password-for-tests';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface TestController {
  controller: RunningController;
  dataDir: string;
  port: number;
  /** Unauthenticated client on the server root. */
  http: HttpClient;
  /** Client on the management API base, logged in as the default admin. */
  mgmt: HttpClient;
  /** Client on the client API base, logged in as the default admin. */
  client: HttpClient;
  adminToken: string;
  ca: string;
  login(username: string, password: string, api?: 'client' | 'management'): Promise<string>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startTestController(
  opts: { dataDir?: string; extraArgs?: string[]; env?: Record<string, string>; keepDataDir?: boolean; start?: StartOptions } = {},
): Promise<TestController> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'portcullis-test-'));
  const port = await freePort();
  const args = ['--data-dir', dataDir, '--address', '127.0.0.1', '--port', String(port), '--admin-user', ADMIN_USER,
    '--admin-password', ADMIN_PASSWORD, '--log-level', 'silent', ...(opts.extraArgs ?? [])];
  let controller = await startController(loadConfig(args, opts.env ?? {}), opts.start);
  const ca = controller.pki.caBundlePem;
  const root = `https://127.0.0.1:${port}`;
  const http = createClient(root, ca);

  const tc: TestController = {
    controller,
    dataDir,
    port,
    http,
    mgmt: http,
    client: http,
    adminToken: '',
    ca,
    async login(username, password, api = 'management') {
      const res = await http.post(`/edge/${api}/v1/authenticate?method=password`, { username, password });
      if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${res.text}`);
      return res.body.data.token as string;
    },
    async restart() {
      await controller.stop();
      controller = await startController(loadConfig(args, opts.env ?? {}), opts.start);
      tc.controller = controller;
    },
    async stop() {
      await controller.stop();
      if (!opts.keepDataDir && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  tc.adminToken = await tc.login(ADMIN_USER, ADMIN_PASSWORD);
  tc.mgmt = createClient(`${root}/edge/management/v1`, ca, { token: tc.adminToken });
  tc.client = createClient(`${root}/edge/client/v1`, ca, { token: tc.adminToken });
  after(() => tc.stop());
  return tc;
}

let counter = 0;
/** A name unique within this test process. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 7)}`;
}
