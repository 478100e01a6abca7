/**
 * The router data model across the controllers of one network (controllers-ha.md §3): the leader builds each change
 * set once into the shared log, and every controller sends the same sets under the same indexes, so a router that
 * moves its subscription to another controller is sent the sets it missed, not a full state. A new leader restarts
 * the chain; routers behind the restart get the full state and converge.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { testStore, uniqueName, type TestController } from '../support/controller.ts';
import { eventually, startCluster } from '../support/cluster.ts';
import { connectRouter, enrolledRouter, type RouterCredentials, type TestRouterConnection } from '../support/test-router.ts';
import { SimRouter, decodeReceived } from '../support/router-model.ts';
import { message } from '../../src/fabric/channel/message.ts';
import { encode, decode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType, type DataStateChangeSet } from '../../src/fabric/proto/edge-ctrl.ts';
import type { ChannelMessage } from '../../src/fabric/channel/message.ts';

const postgres = testStore() === 'postgres';

function subscribe(conn: TestRouterConnection, request: { subscriptionId: string; currentIndex?: bigint; renew?: boolean; timelineId?: string }): void {
  conn.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionDurationSeconds: 300, ...request })));
}

const isModel = (m: ChannelMessage) =>
  m.contentType === EdgeContentType.DataState ||
  (m.contentType === EdgeContentType.DataStateChangeSet && !decode('edge.DataState.ChangeSet', m.body).isSynthetic);

/** Applies what the controller sends until `done` holds; returns how many full states and change sets came. */
async function until(conn: TestRouterConnection, model: SimRouter, done: () => boolean, what: string): Promise<{ states: number; sets: DataStateChangeSet[] }> {
  const got = { states: 0, sets: [] as DataStateChangeSet[] };
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    let msg: ChannelMessage;
    try {
      msg = await conn.next(isModel, 500);
    } catch {
      continue;
    }
    const r = decodeReceived(msg);
    model.receive(r);
    if (r.type === 'state') got.states += 1;
    if (r.type === 'changes') got.sets.push(r.set);
  }
  return got;
}

describe('the router data model across controllers', { skip: !postgres && 'needs PostgreSQL' }, async () => {
  const cluster = postgres ? await startCluster(3) : undefined!;
  const [a, b, c] = postgres ? cluster.members : [];
  let router: RouterCredentials;

  async function service(on: TestController): Promise<string> {
    const res = await on.mgmt.post('/services', { name: uniqueName('rdm'), encryptionRequired: true });
    assert.equal(res.status, 201, res.text);
    return res.body.data.id as string;
  }

  it('sends the same change sets under the same indexes from every controller, and a router that moves gets those it missed', async () => {
    router = await enrolledRouter(a);
    const onA = (await connectRouter(a, router)).conn;
    const model = new SimRouter();
    subscribe(onA, { subscriptionId: 'on-a' });
    await until(onA, model, () => model.index > 0n, 'the full state from A');

    // A second router connection, to C, subscribed too: the same sets, the same indexes.
    const onC = (await connectRouter(c, router)).conn;
    const modelC = new SimRouter();
    subscribe(onC, { subscriptionId: 'on-c' });
    await until(onC, modelC, () => modelC.index > 0n, 'the full state from C');
    assert.equal(modelC.timelineId, model.timelineId, 'one timeline');

    const first = await service(b);
    const fromA = await until(onA, model, () => model.services.has(first), 'the service made on B, on A');
    const fromC = await until(onC, modelC, () => modelC.services.has(first), 'the service made on B, on C');
    const last = (sets: DataStateChangeSet[]) => sets[sets.length - 1]!;
    assert.equal(last(fromA.sets).index, last(fromC.sets).index, 'the same index for the same change');
    assert.deepEqual(last(fromA.sets).changes, last(fromC.sets).changes, 'the same events');
    onC.close();

    // While the router still listens to A only, more writes; then it moves to B with A's index.
    const at = model.index;
    const missed = [await service(c), await service(a)];
    await until(onA, model, () => missed.every((id) => model.services.has(id)), 'the later services on A');
    const moved = new SimRouter();
    Object.assign(moved, { index: at, timelineId: model.timelineId });
    for (const [k, v] of model.services) if (!missed.includes(k)) moved.services.set(k, v);
    const onB = (await connectRouter(b, router)).conn;
    subscribe(onB, { subscriptionId: 'moved-to-b', currentIndex: at, timelineId: model.timelineId, renew: false });
    const got = await until(onB, moved, () => missed.every((id) => moved.services.has(id)), 'the missed services from B');
    assert.equal(got.states, 0, 'no full state: the sets it missed');
    assert.ok(got.sets.length >= 1);
    assert.equal(got.sets[0]!.previousIndex, at, 'the first set follows the index the router had');
    assert.equal(moved.gaps, 0);
    assert.equal(moved.index, model.index);
    onA.close();
    onB.close();
  });

  it('a new leader restarts the chain: a subscribed router converges', async () => {
    const members = [a, b, c];
    const leader = members.find((tc) => tc.controller.membership.isLeader())!;
    const follower = members.find((tc) => tc !== leader)!;
    const conn = (await connectRouter(follower, router)).conn;
    const model = new SimRouter();
    subscribe(conn, { subscriptionId: 'across-takeover' });
    await until(conn, model, () => model.index > 0n, 'the full state');
    await leader.stop();
    const rest = members.filter((tc) => tc !== leader);
    await eventually(() => rest.some((tc) => tc.controller.membership.isLeader()), 5000, 'a new leader');
    const made = await service(rest[0]!);
    await until(conn, model, () => model.services.has(made), 'the service made after the takeover');
    assert.equal(model.gaps, 0);
    conn.close();
  });
});
