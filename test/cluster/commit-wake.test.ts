/**
 * Across controllers, commit notices carry a change to routers without the periodic poll: with every controller's
 * poll an hour apart, a service made on one follower reaches a router subscribed on another. The leader is woken by
 * the write's notice and appends the change set to the shared log; that append's notice wakes the follower, which
 * sends it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { testStore, uniqueName } from '../support/controller.ts';
import { eventually, startCluster } from '../support/cluster.ts';
import { connectRouter, enrolledRouter } from '../support/test-router.ts';
import { SimRouter, decodeReceived } from '../support/router-model.ts';
import { message } from '../../src/fabric/channel/message.ts';
import { encode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType } from '../../src/fabric/proto/edge-ctrl.ts';

const postgres = testStore() === 'postgres';
const AN_HOUR = 3_600_000;

describe('commit notices across controllers', { skip: !postgres && 'needs PostgreSQL' }, async () => {
  const cluster = postgres ? await startCluster(3, { start: { fabric: { pollIntervalMs: AN_HOUR } } }) : undefined!;

  it('bring a change made on one follower to a router of another', async () => {
    await eventually(() => cluster.members.filter((tc) => tc.controller.membership.isLeader()).length === 1, 5000, 'one leader');
    const [maker, sender] = cluster.members.filter((tc) => !tc.controller.membership.isLeader());
    const { conn } = await connectRouter(sender!, await enrolledRouter(sender!));
    conn.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionDurationSeconds: 300, subscriptionId: 'wake' })));
    const model = new SimRouter();
    model.receive(decodeReceived(await conn.nextOf(EdgeContentType.DataState)));

    const res = await maker!.mgmt.post('/services', { name: uniqueName('wake'), encryptionRequired: true });
    assert.equal(res.status, 201, res.text);
    const service = res.body.data.id as string;
    while (!model.services.has(service)) {
      // A change set, or the full state should the leader have restarted the chain meanwhile: either way, woken.
      const set = await conn.next((m) => m.contentType === EdgeContentType.DataStateChangeSet || m.contentType === EdgeContentType.DataState, 5000);
      model.receive(decodeReceived(set));
    }
    assert.equal(model.gaps, 0);
    conn.close();
  });
});
