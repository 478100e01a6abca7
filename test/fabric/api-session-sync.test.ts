/**
 * API sessions as edge routers get them over the control channel, driven by a scripted router: the first router
 * after a quiet period (sessions came and went while no router was connected) gets every live session once, in the
 * full state, and nothing that happened before it again; what happens later arrives once, to every router.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController } from '../support/controller.ts';
import { createClientUser } from '../support/factories.ts';
import { answerServerHello, connectRouter, enrolledRouter, type TestRouterConnection } from '../support/test-router.ts';
import { readString } from '../../src/fabric/channel/message.ts';
import { decode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType, EdgeHeader } from '../../src/fabric/proto/edge-ctrl.ts';

const tc = await startTestController();

/** Longer than a few of the controller's polls of its change feed (100 ms). */
const SEVERAL_POLLS_MS = 600;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An edge router through its edge hello, with the ids of its full API session state. */
async function syncedRouter(): Promise<{ conn: TestRouterConnection; fullState: string[] }> {
  const { conn } = await connectRouter(tc, await enrolledRouter(tc));
  await answerServerHello(conn);
  const fullState: string[] = [];
  for (;;) {
    const chunk = await conn.next((m) => m.contentType === EdgeContentType.ApiSessionAdded && decode('edge.ApiSessionAdded', m.body).isFullState);
    fullState.push(...decode('edge.ApiSessionAdded', chunk.body).apiSessions.map((s) => s.id));
    if (JSON.parse(readString(chunk.headers.get(EdgeHeader.SyncStrategyState))!).isLast) return { conn, fullState };
  }
}

/** Session ids in the incremental additions and removals the router gets within `ms`. */
async function changesWithin(conn: TestRouterConnection, ms: number): Promise<{ added: string[]; removed: string[] }> {
  const out = { added: [] as string[], removed: [] as string[] };
  const deadline = Date.now() + ms;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return out;
    let msg;
    try {
      msg = await conn.next((m) => m.contentType === EdgeContentType.ApiSessionAdded || m.contentType === EdgeContentType.ApiSessionRemoved, left);
    } catch {
      return out;
    }
    if (msg.contentType === EdgeContentType.ApiSessionRemoved) out.removed.push(...decode('edge.ApiSessionRemoved', msg.body).ids);
    else {
      const added = decode('edge.ApiSessionAdded', msg.body);
      assert.equal(added.isFullState, false, 'no second full state');
      out.added.push(...added.apiSessions.map((s) => s.id));
    }
  }
}

describe('API sessions pushed to edge routers', () => {
  it('gives the first router after a quiet period every live session once, then each later change once', async () => {
    // Sessions come and go while no router is connected.
    const kept = await createClientUser(tc);
    const gone = await createClientUser(tc);
    assert.equal((await gone.client.delete('/current-api-session')).status, 200);
    await sleep(SEVERAL_POLLS_MS);

    const first = await syncedRouter();
    assert.ok(first.fullState.includes(kept.apiSessionId), 'a live session is in the full state');
    assert.ok(!first.fullState.includes(gone.apiSessionId), 'an ended one is not');
    assert.equal(new Set(first.fullState).size, first.fullState.length);
    assert.deepEqual(await changesWithin(first.conn, SEVERAL_POLLS_MS), { added: [], removed: [] }, 'nothing from before the full state again');

    // A second router while the first is connected: the same.
    const second = await syncedRouter();
    assert.ok(second.fullState.includes(kept.apiSessionId));
    assert.deepEqual(await changesWithin(second.conn, SEVERAL_POLLS_MS), { added: [], removed: [] });

    // Later changes: once each, to both (the new user also has the session it was given its password with).
    const later = await createClientUser(tc);
    assert.equal((await kept.client.delete('/current-api-session')).status, 200);
    for (const router of [first, second]) {
      const { added, removed } = await changesWithin(router.conn, SEVERAL_POLLS_MS * 2);
      assert.equal(added.filter((id) => id === later.apiSessionId).length, 1, 'the login, once');
      assert.equal(new Set(added).size, added.length, 'no session twice');
      assert.deepEqual(added.filter((id) => first.fullState.includes(id)), [], 'nothing the full state had');
      assert.deepEqual(removed, [kept.apiSessionId], 'the logout, once');
      router.conn.close();
    }
  });
});
