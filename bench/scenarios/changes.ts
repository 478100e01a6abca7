/**
 * Write scenarios: S7 propagation of policy and attribute changes to service-updates and /services,
 * S8 bulk provisioning of identities over REST.
 */
import { fetchOnce, percentileOf, stopChild } from '../lib.ts';
import { Bench, CLIENT, MANAGEMENT, get, postJson } from './context.ts';

const REPS = 5;
const POLL_BOUND_MS = 10_000;

export async function s7(b: Bench): Promise<void> {
  const admin = b.api(2);
  admin.setToken(await b.adminToken());
  const u = b.user('typical');
  const token = await b.login('client', u.username, u.password);
  const typicalId = u.identityId;
  const run = Date.now().toString(36);
  b.notes.push(
    `Each change is made ${REPS} times through the management API. Measured: the write's own latency, and the wall time from the write's response ` +
      'until the typical identity, polling tightly (GET /current-api-session/service-updates then GET /services?filter=name="…", back to back), sees both ' +
      `lastChangeAt advance and the new service listed (bounded to ${POLL_BOUND_MS / 1000} s). ` +
      'Kinds: (all) a new Dial policy #all → @service; (one) a new Dial policy @typical-identity → @service; (attribute) the typical identity gains a ' +
      'role attribute that an existing policy grants. The bare figure is one poll round trip against the bare server — the smallest delay a poller can observe.',
  );

  const kinds = {
    all: async (i: number) => {
      const svc = await newService(admin, `s7-all-${run}-${i}`, []);
      return { name: svc.name, write: () => admin.must('POST', `${MANAGEMENT}/service-policies`, { name: `s7-all-${run}-${i}`, type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all'], serviceRoles: [`@${svc.id}`] }, 201) };
    },
    one: async (i: number) => {
      const svc = await newService(admin, `s7-one-${run}-${i}`, []);
      return { name: svc.name, write: () => admin.must('POST', `${MANAGEMENT}/service-policies`, { name: `s7-one-${run}-${i}`, type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${typicalId}`], serviceRoles: [`@${svc.id}`] }, 201) };
    },
    attribute: async (i: number) => {
      const attr = `s7-attr-${run}-${i}`;
      const svc = await newService(admin, `s7-attr-${run}-${i}`, []);
      await admin.must('POST', `${MANAGEMENT}/service-policies`, { name: `s7-attr-${run}-${i}`, type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${attr}`], serviceRoles: [`@${svc.id}`] }, 201);
      const current = (await admin.must('GET', `${MANAGEMENT}/identities/${typicalId}`, undefined, 200)).data.roleAttributes as string[] | null;
      return { name: svc.name, write: () => admin.must('PATCH', `${MANAGEMENT}/identities/${typicalId}`, { roleAttributes: [...(current ?? []), attr] }, 200) };
    },
  } as const;

  const updates = `${CLIENT}/current-api-session/service-updates`;
  const poll = async (port: number, name: string) => {
    const su = await fetchOnce(port, b.ca, 'GET', updates, get(updates, token).headers);
    const listPath = `${CLIENT}/services?filter=${encodeURIComponent(`name = "${name}"`)}`;
    const list = await fetchOnce(port, b.ca, 'GET', listPath, get(listPath, token).headers);
    return { su, list };
  };

  for (const [kind, prepare] of Object.entries(kinds)) {
    const writeMs: number[] = [];
    const visibleMs: number[] = [];
    const polls: number[] = [];
    for (let i = 0; i < REPS; i++) {
      const change = await prepare(i);
      const before = (JSON.parse((await poll(b.port, change.name)).su.body.toString('utf8')) as { data: { lastChangeAt: string } }).data.lastChangeAt;
      const w0 = performance.now();
      await change.write();
      const w1 = performance.now();
      let n = 0;
      for (;;) {
        n++;
        const { su, list } = await poll(b.port, change.name);
        const after = (JSON.parse(su.body.toString('utf8')) as { data: { lastChangeAt: string } }).data.lastChangeAt;
        const listed = ((JSON.parse(list.body.toString('utf8')) as { data: unknown[] }).data ?? []).length > 0;
        if (after !== before && listed) break;
        if (performance.now() - w1 > POLL_BOUND_MS) throw new Error(`S7 ${kind}: change not visible after ${POLL_BOUND_MS} ms`);
      }
      visibleMs.push(performance.now() - w1);
      writeMs.push(w1 - w0);
      polls.push(n);
    }
    writeMs.sort((x, y) => x - y);
    visibleMs.sort((x, y) => x - y);
    b.metric({ name: `${kind}: write latency (median of ${REPS})`, unit: 'ms', portcullis: percentileOf(writeMs, 50) });
    b.metric({
      name: `${kind}: write response → visible (median of ${REPS})`,
      unit: 'ms',
      portcullis: percentileOf(visibleMs, 50),
      note: `max ${visibleMs[visibleMs.length - 1]!.toFixed(2)} ms; polls needed: ${polls.join(', ')}`,
    });
  }

  // Bare: the round trip of one poll pair (service-updates + filtered /services) against canned bytes.
  const name = `s7-all-${run}-0`;
  const pair = await poll(b.port, name);
  const listPath = `${CLIENT}/services?filter=${encodeURIComponent(`name = "${name}"`)}`;
  const enc = (c: { status: number; contentType: string; body: Buffer }) => ({ status: c.status, contentType: c.contentType, bodyBase64: c.body.toString('base64') });
  const bare = await b.startBare({ [updates]: enc(pair.su), [listPath]: enc(pair.list) });
  try {
    const rt = async (port: number) => {
      const out: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        await poll(port, name);
        out.push(performance.now() - t0);
      }
      return percentileOf(out.sort((x, y) => x - y), 50);
    };
    b.metric({ name: 'one poll pair round trip (median of 20, new connection each)', unit: 'ms', portcullis: await rt(b.port), bare: await rt(bare.port) });
  } finally {
    await stopChild(bare.child);
  }
  admin.close();
}

async function newService(admin: ReturnType<Bench['api']>, name: string, roleAttributes: string[]): Promise<{ id: string; name: string }> {
  const r = await admin.must('POST', `${MANAGEMENT}/services`, { name, encryptionRequired: true, roleAttributes }, 201);
  return { id: r.data.id as string, name };
}

export async function s8(b: Bench): Promise<void> {
  const token = await b.adminToken();
  const run = Date.now().toString(36);
  let n = 0;
  const gen = () => postJson(`${MANAGEMENT}/identities`, { name: `bulk-${run}-${n++}`, type: 'Default', isAdmin: false, roleAttributes: ['bulk'] }, token);
  b.notes.push(
    'POST /edge/management/v1/identities (unique name, one role attribute) as the admin, at 1, 8 and 32 concurrent connections (closed loop, at most 20,000 ' +
      'creations per run); the open loop runs at the 8-connection figure. Every request creates an identity in the private copy of the dataset.',
  );
  for (const connections of [1, 8, 32]) {
    await b.loadPair(`create identity, concurrency ${connections}`, gen, { status: 201, connections, maxRequests: 20_000, open: connections === 8 });
  }
}
