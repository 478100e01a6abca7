/**
 * Several controllers on one PostgreSQL store form one network. This module decides, at start, which controller
 * this is and what it shares with the others, and afterwards keeps the view of who is alive and who leads.
 *
 * Start (under a session advisory lock, so controllers starting together take turns):
 * - a database with no network: this controller founds it. The network id is its id (and the router data model's
 *   timeline); its PKI is loaded or created; the root's fingerprint and both CA certificates are recorded; with a
 *   cluster secret, the intermediate's key and the session seal key are published, wrapped (src/pki/key-wrap.ts).
 * - a network, and a data dir whose root CA is that network's: a restart (the founder keeps the network id as its
 *   own id; a data dir written before ids lived there is the founder's).
 * - a network, and a data dir with no PKI: a join. The shared keys are unwrapped with the secret; the CA
 *   certificates are written to the data dir, the intermediate's key is kept in memory only, and the controller
 *   issues itself a server certificate of its own key. It gets an id of its own.
 * - a data dir of another network (another root CA): refused.
 * The id is kept in `<data dir>/controller.json`.
 *
 * Liveness is PostgreSQL's: every process of a controller holds, on a connection of its own, a shared advisory lock
 * keyed by its controller id (a second controller starting with that id cannot take it exclusively and is refused)
 * and an exclusive one keyed by its process origin. A process killed or cut off loses its connection, and the
 * server drops its locks: at once for a killed process, after the TCP keepalives (about 11 s) for a lost host.
 * Leadership is one more advisory lock, which every process tries for twice a second. The leader marks controllers
 * whose lock is gone offline, bumps the membership version, and clears the live rows (router connections,
 * circuits, links, an integrity run) of processes whose lock is gone.
 */
import { readFile, writeFile, rename, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../config.ts';
import type { Store } from '../store/store.ts';
import type { PostgresStore } from '../store/postgres/postgres-store.ts';
import { loadOrCreatePki, type ControllerPki } from '../pki/certificate-authority.ts';
import { readPkiFile, writePkiFiles, ensurePkiDirectory } from '../pki/pki-files.ts';
import { sha1Fingerprint } from '../pki/fingerprint.ts';
import { certificateDer } from '../pki/pem.ts';
import { keyWrap, type KeyWrap } from '../pki/key-wrap.ts';
import { loadOrCreateTokenSeal, tokenSeal, type TokenSeal } from '../auth/token-seal.ts';
import { newShortId } from '../ids.ts';
import type { ControllerMember, Membership, MembershipEvent } from './membership.ts';

/** Advisory lock namespaces (the first key of the two-key form): ASCII "pcS0", "pcC0", "pcP0", "pcL0". */
const NS_START = 0x70635330;
const NS_CONTROLLER = 0x70634330;
const NS_PROCESS = 0x70635030;
const NS_LEADER = 0x70634c30;

const CONTROLLER_FILE = 'controller.json';
const FACT = { network: 'instance-id', root: 'root-fingerprint', rootCert: 'root-cert', intermediateCert: 'intermediate-cert', version: 'membership-version', epoch: 'leader-epoch', leader: 'leader-controller' } as const;
const SHARED = { intermediateKey: 'intermediate-ca-key', seal: 'api-session-seal-key', check: 'check' } as const;
const CHECK_TEXT = 'portcullis cluster secret check';

export interface ControllerFile {
  controllerId: string;
  networkId: string;
}

export interface NetworkStart {
  controllerId: string;
  networkId: string;
  pki: ControllerPki;
  seal: TokenSeal;
  /** The session holding this process's locks (PostgreSQL); undefined on SQLite. */
  session?: ControllerSession;
}

export interface StartNetworkOptions {
  /** This process's name in the change feed and as owner of live rows. */
  origin: string;
  /** False in a worker process of a controller already started by another process (it only joins the locks). */
  firstStart: boolean;
}

async function readControllerFile(dataDir: string): Promise<ControllerFile | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, CONTROLLER_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const parsed = JSON.parse(text) as Partial<ControllerFile>;
  if (typeof parsed.controllerId !== 'string' || typeof parsed.networkId !== 'string') throw new Error(`${join(dataDir, CONTROLLER_FILE)} is damaged`);
  return { controllerId: parsed.controllerId, networkId: parsed.networkId };
}

async function writeControllerFile(dataDir: string, file: ControllerFile): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  const target = join(dataDir, CONTROLLER_FILE);
  const temp = `${target}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temp, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
  await rename(temp, target);
}

async function readSecret(config: Config): Promise<string | undefined> {
  if (config.clusterSecretFile === undefined) return undefined;
  try {
    return (await readFile(config.clusterSecretFile, 'utf8')).trim();
  } catch (err) {
    throw new Error(`cannot read the cluster secret file ${config.clusterSecretFile}: ${(err as Error).message}`);
  }
}

function rootFingerprint(pem: string): string {
  return sha1Fingerprint(new Uint8Array(certificateDer(pem)));
}

/** Where a refusal tells the operator the database is. */
function describe(store: Store): string {
  return (store as Partial<PostgresStore>).location ?? 'the database';
}

/**
 * Decides who this controller is and loads its PKI and session seal, joining or founding the network on a shared
 * store; on SQLite, what it always was (the data dir holds the store, so the database's id is the controller's).
 */
export async function startNetwork(store: Store, config: Config, options: StartNetworkOptions): Promise<NetworkStart> {
  const pkiDir = join(config.dataDir, 'pki');
  const pkiOptions = { advertise: config.advertise, serverKeyType: config.serverKeyType };
  if (store.kind !== 'postgres') {
    const pki = await loadOrCreatePki(pkiDir, pkiOptions);
    const seal = await loadOrCreateTokenSeal(pkiDir);
    const id = await networkIdOf(store);
    return { controllerId: id, networkId: id, pki, seal };
  }
  const pgStore = store as PostgresStore;
  const client = await pgStore.session('session');
  try {
    await client.query('SELECT pg_advisory_lock($1, 0)', [NS_START]);
    try {
      const start = await decide(pgStore, client, config, pkiDir, pkiOptions, options);
      return start;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, 0)', [NS_START]).catch(() => undefined);
    }
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

async function networkIdOf(store: Store): Promise<string> {
  return store.write(async (tx) => {
    const value = await tx.value<string>('SELECT value FROM controller_facts WHERE key = ?', [FACT.network]);
    if (value !== undefined) return value;
    const id = newShortId();
    await tx.run('INSERT INTO controller_facts (key, value) VALUES (?, ?)', [FACT.network, id]);
    return id;
  });
}

async function facts(store: Store): Promise<Map<string, string>> {
  const rows = await store.all<{ key: string; value: string }>('SELECT key, value FROM controller_facts');
  return new Map(rows.map((r) => [r.key, r.value]));
}

async function decide(
  store: PostgresStore,
  client: pg.Client,
  config: Config,
  pkiDir: string,
  pkiOptions: { advertise: string; serverKeyType: Config['serverKeyType'] },
  options: StartNetworkOptions,
): Promise<NetworkStart> {
  const known = await facts(store);
  const file = await readControllerFile(config.dataDir);
  const secret = await readSecret(config);
  await ensurePkiDirectory(pkiDir);
  const localRoot = await readPkiFile(pkiDir, 'rootCert');
  let networkId = known.get(FACT.network);
  let controllerId: string;
  let pki: ControllerPki;
  let seal: TokenSeal;

  if (networkId === undefined) {
    // A database with no network yet: this controller founds one.
    controllerId = file?.controllerId ?? newShortId();
    networkId = controllerId;
    pki = await loadOrCreatePki(pkiDir, pkiOptions);
    seal = await loadOrCreateTokenSeal(pkiDir);
    await recordNetwork(store, networkId, pki);
  } else {
    if (file && file.networkId !== networkId) {
      throw new Error(
        `the database ${describe(store)} belongs to network ${networkId}, but the data dir ${config.dataDir} to network ${file.networkId}: ` +
          'use an empty --data-dir to join that network, or the database of this one',
      );
    }
    const recordedRoot = known.get(FACT.root);
    if (localRoot !== undefined) {
      const fingerprint = rootFingerprint(localRoot);
      if (recordedRoot !== undefined && recordedRoot !== fingerprint) {
        throw new Error(
          `the database ${describe(store)} belongs to network ${networkId} (root CA ${recordedRoot}), but the data dir ${config.dataDir} ` +
            `holds another PKI (root CA ${fingerprint}): use an empty --data-dir to join that network, or the database of this one`,
        );
      }
      // A restart. A data dir from before ids lived in it is the founder's.
      controllerId = file?.controllerId ?? networkId;
      const hasKey = (await readPkiFile(pkiDir, 'intermediateKey')) !== undefined;
      const shared = hasKey ? undefined : await unwrapShared(store, networkId, secret, 'restart');
      pki = await loadOrCreatePki(pkiDir, { ...pkiOptions, createCa: false, intermediateKeyPem: shared?.intermediateKey });
      seal = shared ? tokenSeal(Buffer.from(shared.seal, 'base64')) : await loadOrCreateTokenSeal(pkiDir);
      if (recordedRoot === undefined) await recordNetwork(store, networkId, pki);
    } else {
      // A join: the shared keys, the CA certificates from the store, a server key and certificate of its own.
      if (recordedRoot === undefined || known.get(FACT.rootCert) === undefined) {
        throw new Error(`network ${networkId} in ${describe(store)} has no recorded CA yet: start its first controller again (this release records it), then join`);
      }
      const shared = await unwrapShared(store, networkId, secret, 'join');
      await writePkiFiles(pkiDir, { rootCert: known.get(FACT.rootCert)!, intermediateCert: known.get(FACT.intermediateCert)! });
      controllerId = file?.controllerId ?? newShortId();
      pki = await loadOrCreatePki(pkiDir, { ...pkiOptions, createCa: false, intermediateKeyPem: shared.intermediateKey });
      seal = tokenSeal(Buffer.from(shared.seal, 'base64'));
    }
  }
  // The keys others need, published once by a controller that holds them in files.
  if (secret !== undefined) await publishShared(store, networkId, secret, pkiDir);

  const session = await createControllerSession(store, client, { controllerId, origin: options.origin, exclusive: options.firstStart });
  await writeControllerFile(config.dataDir, { controllerId, networkId });
  return { controllerId, networkId, pki, seal, session };
}

async function recordNetwork(store: Store, networkId: string, pki: ControllerPki): Promise<void> {
  const values: Array<[string, string]> = [
    [FACT.network, networkId],
    [FACT.root, rootFingerprint(pki.rootCertPem)],
    [FACT.rootCert, pki.rootCertPem],
    [FACT.intermediateCert, pki.intermediateCertPem],
  ];
  await store.write(async (tx) => {
    for (const [key, value] of values) await tx.run('INSERT INTO controller_facts (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING', [key, value]);
  });
}

async function publishShared(store: Store, networkId: string, secret: string, pkiDir: string): Promise<void> {
  const intermediateKey = await readPkiFile(pkiDir, 'intermediateKey');
  const sealKey = await readPkiFile(pkiDir, 'sessionSealKey');
  if (intermediateKey === undefined || sealKey === undefined) return;
  const wrap = keyWrap(secret, networkId);
  const existing = await store.get<{ wrapped: string }>('SELECT wrapped FROM shared_keys WHERE name = ?', [SHARED.check]);
  if (existing) {
    if (wrap.unwrap(SHARED.check, existing.wrapped) !== CHECK_TEXT) throw wrongSecret(networkId);
    return;
  }
  const now = new Date().toISOString();
  await store.write(async (tx) => {
    const insert = 'INSERT INTO shared_keys (name, wrapped, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING';
    await tx.run(insert, [SHARED.intermediateKey, wrap.wrap(SHARED.intermediateKey, intermediateKey), now]);
    await tx.run(insert, [SHARED.seal, wrap.wrap(SHARED.seal, sealKey.trim()), now]);
    await tx.run(insert, [SHARED.check, wrap.wrap(SHARED.check, CHECK_TEXT), now]);
  });
}

function wrongSecret(networkId: string): Error {
  return new Error(`the cluster secret does not open the keys of network ${networkId}: give every controller the same --cluster-secret-file`);
}

async function unwrapShared(store: Store, networkId: string, secret: string | undefined, why: 'join' | 'restart'): Promise<{ intermediateKey: string; seal: string }> {
  if (secret === undefined) {
    throw new Error(
      why === 'join'
        ? `joining network ${networkId} needs its cluster secret: give this controller the --cluster-secret-file of the others`
        : `this controller joined network ${networkId} and keeps its shared keys only in memory: start it with --cluster-secret-file`,
    );
  }
  const rows = await store.all<{ name: string; wrapped: string }>('SELECT name, wrapped FROM shared_keys');
  const byName = new Map(rows.map((r) => [r.name, r.wrapped]));
  if (!byName.has(SHARED.check)) {
    throw new Error(`network ${networkId} has no shared keys: restart its first controller with --cluster-secret-file, then join`);
  }
  const wrap: KeyWrap = keyWrap(secret, networkId);
  if (wrap.unwrap(SHARED.check, byName.get(SHARED.check)!) !== CHECK_TEXT) throw wrongSecret(networkId);
  const intermediateKey = wrap.unwrap(SHARED.intermediateKey, byName.get(SHARED.intermediateKey) ?? '');
  const seal = wrap.unwrap(SHARED.seal, byName.get(SHARED.seal) ?? '');
  if (intermediateKey === undefined || seal === undefined) throw new Error(`the shared keys of network ${networkId} are damaged`);
  return { intermediateKey, seal };
}

// ---- the session: locks, liveness, leadership ----------------------------------------------------------------------

/** The live rows of a process: cleared by the leader once the process's lock is gone. */
export type ProcessCleanup = (origin: string) => Promise<void>;

export interface ControllerSession {
  readonly controllerId: string;
  /** Starts polling membership and leadership; `self` is this controller's record as registered. */
  membership(self: ControllerMember, networkId: string, options?: MembershipOptions): Promise<Membership & { stop(): Promise<void> }>;
  /** Whether another live controller (not this one) is registered: at start, whether shared live rows are others'. */
  othersAlive(): Promise<boolean>;
  /** The id of another live controller registered with this control address, if any. */
  liveWithAddress(ctrlAddress: string): Promise<string | undefined>;
  /** Ends the session (its locks go with it). */
  close(): Promise<void>;
}

export interface MembershipOptions {
  /** How often membership and leadership are checked (default 500 ms). */
  pollMs?: number;
  /** Clears the live rows of a dead process (leader only). */
  clearProcess?: ProcessCleanup;
  log?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

const LOCK_HELD = `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = $1::int::oid AND l.objid = hashtext(%KEY%)::oid)`;

function lockHeld(namespace: number, key: string): { sql: string; param: number } {
  return { sql: LOCK_HELD.replace('%KEY%', key), param: namespace };
}

async function createControllerSession(
  store: PostgresStore,
  client: pg.Client,
  self: { controllerId: string; origin: string; exclusive: boolean },
): Promise<ControllerSession> {
  if (self.exclusive) {
    const taken = Boolean((await client.query('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [NS_CONTROLLER, self.controllerId])).rows[0].ok);
    if (!taken) {
      const row = (await client.query('SELECT ctrl_address, last_joined_at FROM controllers WHERE id = $1', [self.controllerId])).rows[0] as
        | { ctrl_address: string | null; last_joined_at: string }
        | undefined;
      throw new Error(
        `controller id ${self.controllerId} is in use by a running controller` +
          (row ? ` (${row.ctrl_address ?? 'no address'}, joined ${row.last_joined_at})` : '') +
          ': give this one a data dir of its own (an empty one joins the network with a new id)',
      );
    }
    await client.query('SELECT pg_advisory_lock_shared($1, hashtext($2))', [NS_CONTROLLER, self.controllerId]);
    await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [NS_CONTROLLER, self.controllerId]);
  } else {
    await client.query('SELECT pg_advisory_lock_shared($1, hashtext($2))', [NS_CONTROLLER, self.controllerId]);
  }
  await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [NS_PROCESS, self.origin]);

  let closed = false;
  let current = client;
  let broken = false;
  client.on('error', () => (broken = true));
  client.on('end', () => (broken = true));

  async function query<T>(sql: string, params: unknown[]): Promise<T[]> {
    return (await current.query(sql, params)).rows as T[];
  }

  /** After a lost connection: a new one, with this process's locks taken again. */
  async function reconnect(): Promise<void> {
    await current.end().catch(() => undefined);
    const fresh = await store.session('session');
    try {
      await fresh.query('SELECT pg_advisory_lock_shared($1, hashtext($2))', [NS_CONTROLLER, self.controllerId]);
      await fresh.query('SELECT pg_advisory_lock($1, hashtext($2))', [NS_PROCESS, self.origin]);
    } catch (err) {
      await fresh.end().catch(() => undefined);
      throw err;
    }
    broken = false;
    fresh.on('error', () => (broken = true));
    fresh.on('end', () => (broken = true));
    current = fresh;
  }

  async function othersAlive(): Promise<boolean> {
    const held = lockHeld(NS_CONTROLLER, 'c.id');
    const rows = await query<{ id: string }>(`SELECT c.id FROM controllers c WHERE c.id <> $2 AND ${held.sql}`, [held.param, self.controllerId]);
    return rows.length > 0;
  }

  async function liveWithAddress(ctrlAddress: string): Promise<string | undefined> {
    const held = lockHeld(NS_CONTROLLER, 'c.id');
    const rows = await query<{ id: string }>(`SELECT c.id FROM controllers c WHERE c.id <> $2 AND c.ctrl_address = $3 AND ${held.sql}`, [
      held.param,
      self.controllerId,
      ctrlAddress,
    ]);
    return rows[0]?.id;
  }

  async function membership(me: ControllerMember, networkId: string, options: MembershipOptions = {}) {
    const listeners = new Set<(event: MembershipEvent) => void>();
    let members: readonly ControllerMember[] = Object.freeze([me]);
    let everyone: readonly ControllerMember[] = members;
    let version = 0;
    let leader = false;
    let epoch = 0;
    /** Controllers and processes whose lock the previous pass found missing. */
    let missingBefore = new Set<string>();
    let goneBefore = new Set<string>();
    const emit = (event: MembershipEvent) => {
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (err) {
          options.log?.warn({ err: (err as Error).message }, 'a membership listener failed');
        }
      }
    };

    async function readMembers(): Promise<void> {
      const rows = await query<{ id: string; ctrl_address: string | null; cert_pem: string; fingerprint: string; is_online: number; version: string | null }>(
        `SELECT c.id, c.ctrl_address, c.cert_pem, c.fingerprint, c.is_online, (SELECT value FROM controller_facts WHERE key = '${FACT.version}') AS version
           FROM controllers c ORDER BY c.id`,
        [],
      );
      const seen = Number(rows[0]?.version ?? 0);
      const all = rows.map((r) => Object.freeze({ id: r.id, ctrlAddress: r.ctrl_address ?? '', certPem: r.cert_pem, fingerprint: r.fingerprint }));
      if (!all.some((m) => m.id === me.id)) all.push(me);
      if (all.length !== everyone.length || all.some((m, i) => m.fingerprint !== everyone[i]?.fingerprint)) everyone = Object.freeze(all);
      const online = new Set(rows.filter((r) => r.is_online === 1).map((r) => r.id));
      const next = all.filter((m) => m.id === me.id || online.has(m.id));
      const changed = seen !== version || next.length !== members.length || next.some((m, i) => m.id !== members[i]?.id || m.fingerprint !== members[i]?.fingerprint);
      if (seen > version) version = seen;
      if (changed) {
        members = Object.freeze(next);
        emit('members');
      }
    }

    /** Leader: the controllers whose lock is gone go offline (and come back online), the version moves with them. */
    async function sweepControllers(): Promise<void> {
      const held = lockHeld(NS_CONTROLLER, 'c.id');
      // Booleans come back as 1 or 0 on these connections (the store's type parsers), as from SQLite.
      const rows = (await query<{ id: string; is_online: number; live: number | boolean }>(`SELECT c.id, c.is_online, ${held.sql} AS live FROM controllers c`, [held.param])).map(
        (r) => ({ id: r.id, is_online: Number(r.is_online), live: Boolean(r.live) }),
      );
      // A controller is taken offline once its lock has been missing at two passes in a row (a session cut for a moment
      // comes back within one); it comes back online at once.
      const missing = new Set(rows.filter((r) => r.is_online === 1 && !r.live).map((r) => r.id));
      const changed = rows.filter((r) => (r.is_online === 1) !== r.live && (r.live || missingBefore.has(r.id)));
      missingBefore = missing;
      if (changed.length === 0) return;
      await store.write(async (tx) => {
        for (const r of changed) await tx.run('UPDATE controllers SET is_online = ? WHERE id = ?', [r.live ? 1 : 0, r.id]);
        await bumpVersion(tx);
      });
      options.log?.info({ controllers: changed.map((r) => ({ id: r.id, online: r.live })) }, 'controller membership changed');
    }

    async function sweepProcesses(): Promise<void> {
      if (!options.clearProcess) return;
      const held = lockHeld(NS_PROCESS, 'o.owner');
      const rows = await query<{ owner: string }>(
        `SELECT o.owner FROM (SELECT owner FROM router_connections UNION SELECT owner FROM circuits UNION SELECT owner FROM links
           UNION SELECT run_owner AS owner FROM database_ops_state WHERE in_progress = 1 AND run_owner IS NOT NULL) o
         WHERE NOT ${held.sql}`,
        [held.param],
      );
      // As controllers: gone at two passes in a row.
      const gone = new Set(rows.map((r) => r.owner));
      for (const owner of gone) {
        if (!goneBefore.has(owner)) continue;
        options.log?.info({ origin: owner }, 'clearing the live rows of a controller process that is gone');
        await options.clearProcess(owner);
      }
      goneBefore = gone;
    }

    async function tryLead(): Promise<void> {
      if (leader) return;
      const ok = Boolean((await query<{ ok: number | boolean }>('SELECT pg_try_advisory_lock($1, 0) AS ok', [NS_LEADER]))[0].ok);
      if (!ok) return;
      epoch = await store.write(async (tx) => {
        const now = Number((await tx.value<string>('SELECT value FROM controller_facts WHERE key = ?', [FACT.epoch])) ?? 0) + 1;
        const upsert = 'INSERT INTO controller_facts (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value';
        await tx.run(upsert, [FACT.epoch, String(now)]);
        // Who leads, for operators (and tests) reading the store.
        await tx.run(upsert, [FACT.leader, me.id]);
        return now;
      });
      leader = true;
      options.log?.info({ controllerId: me.id, epoch }, 'this controller process leads the network');
      emit('leader');
    }

    function stepDown(): void {
      if (!leader) return;
      leader = false;
      emit('leader');
    }

    let running: Promise<void> | undefined;
    let failures = 0;
    async function pass(): Promise<void> {
      if (broken) {
        stepDown();
        await reconnect();
        options.log?.info({ controllerId: me.id }, 'the cluster session is back');
      }
      await tryLead();
      if (leader) {
        await sweepControllers();
        await sweepProcesses();
      }
      await readMembers();
    }
    const tick = () => {
      if (running || closed) return;
      running = pass()
        .then(() => {
          failures = 0;
        })
        .catch((err: Error) => {
          if (failures++ % 20 === 0) options.log?.warn({ err: err.message }, 'cluster membership check failed');
          if (!broken && /terminat|connection|ECONNRESET|EPIPE/i.test(err.message)) broken = true;
        })
        .finally(() => (running = undefined));
    };
    await pass();
    const timer = setInterval(tick, options.pollMs ?? 500);
    timer.unref();

    return {
      controllerId: me.id,
      networkId,
      clustered: true,
      live: () => members,
      known: () => everyone,
      version: () => Math.max(1, version),
      isLeader: () => leader,
      leaderEpoch: () => Math.max(1, epoch),
      onChange(listener: (event: MembershipEvent) => void) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      async stop() {
        clearInterval(timer);
        await running;
        listeners.clear();
        leader = false;
      },
    };
  }

  return {
    controllerId: self.controllerId,
    membership,
    othersAlive,
    liveWithAddress,
    async close() {
      if (closed) return;
      closed = true;
      await current.end().catch(() => undefined);
    },
  };
}

/** Moves the membership version (in the transaction that changed who is online). */
export async function bumpVersion(tx: { value<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined>; run(sql: string, params?: readonly unknown[]): Promise<unknown> }): Promise<void> {
  const now = Number((await tx.value<string>('SELECT value FROM controller_facts WHERE key = ?', [FACT.version])) ?? 0) + 1;
  await tx.run('INSERT INTO controller_facts (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [FACT.version, String(now)]);
}
