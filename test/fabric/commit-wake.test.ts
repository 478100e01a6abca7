/**
 * A commit wakes the fabric's poll: with the periodic poll an hour apart, what REST changes still reaches connected
 * routers (the router data model's change sets, API sessions added and removed), because each commit that appends to
 * the change feed (on PostgreSQL, by its feed notice) runs the poll at once.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestController, uniqueName } from '../support/controller.ts';
import { createClientUser, createRecord } from '../support/factories.ts';
import { answerServerHello, connectRouter, enrolledRouter } from '../support/test-router.ts';
import { SimRouter, decodeReceived } from '../support/router-model.ts';
import { message } from '../../src/fabric/channel/message.ts';
import { decode, encode } from '../../src/fabric/proto/index.ts';
import { EdgeContentType } from '../../src/fabric/proto/edge-ctrl.ts';

const AN_HOUR = 3_600_000;
const tc = await startTestController({ start: { fabric: { pollIntervalMs: AN_HOUR } } });

describe('a commit wakes the fabric poll', () => {
  it('brings routers change sets and API session changes without waiting for the periodic poll', async () => {
    const { conn } = await connectRouter(tc, await enrolledRouter(tc));
    await answerServerHello(conn);
    conn.send(message(EdgeContentType.SubscribeToDataModelRequest, encode('edge.SubscribeToDataModelRequest', { subscriptionDurationSeconds: 300, subscriptionId: 'wake' })));
    const model = new SimRouter();
    model.receive(decodeReceived(await conn.nextOf(EdgeContentType.DataState)));

    const tag = uniqueName('wake');
    const service = await createRecord(tc.mgmt, '/services', { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: [tag] });
    while (!model.services.has(service)) {
      const set = await conn.next((m) => m.contentType === EdgeContentType.DataStateChangeSet, 5000);
      model.receive(decodeReceived(set));
    }
    assert.equal(model.gaps, 0);

    const user = await createClientUser(tc);
    const added = await conn.next(
      (m) => m.contentType === EdgeContentType.ApiSessionAdded && decode('edge.ApiSessionAdded', m.body).apiSessions.some((s) => s.id === user.apiSessionId),
      5000,
    );
    assert.equal(decode('edge.ApiSessionAdded', added.body).isFullState, false);
    assert.equal((await user.client.delete('/current-api-session')).status, 200);
    await conn.next((m) => m.contentType === EdgeContentType.ApiSessionRemoved && decode('edge.ApiSessionRemoved', m.body).ids.includes(user.apiSessionId), 5000);
    conn.close();
  });
});
