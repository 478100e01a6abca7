/**
 * Read scenarios: S1 service-updates over many API sessions, S2 the tunneler's polling tick over many
 * identities, S3 the client service list (configTypes=all, pages of 25 and 500, typical and worst-case
 * identity), S6 session creation, S9 the management identity list at deep offsets.
 */
import { Bench, CLIENT, MANAGEMENT, get, postJson } from './context.ts';

export async function s1(b: Bench): Promise<void> {
  const tokens = await b.manySessions(b.opts.sessions);
  b.notes.push(`${tokens.length} API sessions of distinct identities; request i uses session i mod ${tokens.length} (rotating tokens).`);
  await b.loadPair(`service-updates × ${tokens.length} sessions`, (i) => get(`${CLIENT}/current-api-session/service-updates`, tokens[i % tokens.length]!), { status: 200, target: true });
}

export async function s2(b: Bench): Promise<void> {
  const tokens = await b.manySessions(b.opts.sessions);
  const paths = [`${CLIENT}/current-identity`, `${CLIENT}/current-identity/edge-routers?limit=25&offset=0`, `${CLIENT}/current-api-session/service-updates`];
  b.notes.push(
    `One tick = GET /current-identity, GET /current-identity/edge-routers?limit=25, GET /current-api-session/service-updates; ` +
      `${tokens.length} identities, each with its own API session; request i is step i mod 3 of identity ⌊i/3⌋ mod ${tokens.length}. ` +
      'req/s counts requests (ticks/s = req/s ÷ 3).',
  );
  await b.loadPair(`tunneler tick × ${tokens.length} identities`, (i) => get(paths[i % 3]!, tokens[Math.floor(i / 3) % tokens.length]!), { status: 200, captureDistinct: 3, target: true });
}

export async function s3(b: Bench): Promise<void> {
  for (const role of ['typical', 'worst'] as const) {
    const u = b.user(role);
    const token = await b.login('client', u.username, u.password);
    for (const limit of [25, 500]) {
      const path = `${CLIENT}/services?configTypes=all&limit=${limit}&offset=0`;
      await b.loadPair(`${role} identity, page of ${limit}`, () => get(path, token), { status: 200, target: true });
    }
  }
  b.notes.push(`typical identity sees ${b.dataset.probes.typicalServiceCount} services, the worst-case identity ${b.dataset.probes.worstServiceCount}.`);
}

export async function s6(b: Bench): Promise<void> {
  // The typical identity when it has a dialable service with an edge router, else the worst-case identity.
  for (const role of ['typical', 'worst'] as const) {
    const u = b.user(role);
    const token = await b.login('client', u.username, u.password);
    const api = b.api(1);
    api.setToken(token);
    const list = (await api.must('GET', `${CLIENT}/services?limit=500`, undefined, 200)).data as Array<{ id: string; permissions: string[] }>;
    let serviceId: string | undefined;
    for (const s of list) {
      if (!s.permissions.includes('Dial')) continue;
      const r = await api.call('POST', `${CLIENT}/sessions`, { serviceId: s.id, type: 'Dial' });
      if (r.status === 201) {
        serviceId = s.id;
        break;
      }
    }
    api.close();
    if (!serviceId) continue;
    b.notes.push(`POST /sessions {type: Dial} by the ${role} identity for one service; a repeated request by the same API session gets its existing session back (as upstream).`);
    await b.loadPair(`POST /sessions (Dial, ${role} identity)`, () => postJson(`${CLIENT}/sessions`, { serviceId, type: 'Dial' }, token), { status: 201, target: true });
    return;
  }
  throw new Error('S6: neither the typical nor the worst-case identity has a dialable service with an edge router');
}

export async function s9(b: Bench): Promise<void> {
  const token = await b.adminToken();
  const filter = encodeURIComponent('isAdmin = false sort by name desc');
  const api = b.api(1);
  api.setToken(token);
  for (const offset of [0, 50_000, 100_000]) {
    const path = `${MANAGEMENT}/identities?filter=${filter}&limit=25&offset=${offset}`;
    const page = await api.must('GET', path, undefined, 200);
    const note = `offset ${offset}: totalCount ${page.meta.pagination.totalCount}, ${page.data.length} items on the page`;
    b.notes.push(note);
    await b.loadPair(`identities, filter + sort, offset ${offset / 1000}k`, () => get(path, token), { status: 200 });
  }
  api.close();
  b.notes.unshift('GET /edge/management/v1/identities?filter=isAdmin = false sort by name desc&limit=25&offset=N, as the admin.');
}
