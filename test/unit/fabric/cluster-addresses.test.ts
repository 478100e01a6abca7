/**
 * What routers hear about the controllers of a network: UpdateCtrlAddresses carries every live controller's address
 * in both the old list (field 1) and the v2.0.3 one (field 4), the membership version as index and whether the
 * sender leads; UpdateClusterLeader carries the leader's epoch. Pinned as bytes for one case, so the field numbers
 * routers read cannot drift.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { clusterLeaderMessage, ctrlAddressesMessage, ctrlAddressesUpdate, type ClusterView } from '../../../src/fabric/cluster-addresses.ts';
import { CtrlContentType } from '../../../src/fabric/proto/ctrl.ts';
import { decode } from '../../../src/fabric/proto/index.ts';
import type { ControllerMember } from '../../../src/cluster/membership.ts';

function member(id: string, address: string): ControllerMember {
  return { id, ctrlAddress: address, certPem: '', fingerprint: id.padEnd(40, '0') };
}

function view(members: ControllerMember[], opts: { version?: number; leader?: boolean; epoch?: number } = {}): ClusterView {
  return { live: () => members, version: () => opts.version ?? 1, isLeader: () => opts.leader ?? false, leaderEpoch: () => opts.epoch ?? 1 };
}

describe('UpdateCtrlAddresses', () => {
  it('ok/lists every live controller in order, in both the address list and the controller details', () => {
    const body = ctrlAddressesUpdate(view([member('a', 'tls:a.test:1280'), member('b', 'tls:b.test:1280')], { version: 7, leader: true }));
    assert.deepEqual(body, {
      addresses: ['tls:a.test:1280', 'tls:b.test:1280'],
      index: 7n,
      isLeader: true,
      controllers: [
        { id: 'a', endpoints: [{ address: 'tls:a.test:1280', groups: [] }] },
        { id: 'b', endpoints: [{ address: 'tls:b.test:1280', groups: [] }] },
      ],
    });
  });

  it('ok/a follower says it does not lead', () => {
    const msg = ctrlAddressesMessage(view([member('a', 'tls:a.test:1280')], { version: 3, leader: false }));
    assert.equal(msg.contentType, CtrlContentType.UpdateCtrlAddresses);
    const decoded = decode('ctrl.UpdateCtrlAddresses', msg.body);
    assert.equal(decoded.isLeader, false);
    assert.equal(decoded.index, 3n);
    assert.deepEqual(decoded.addresses, ['tls:a.test:1280']);
  });

  it('ok/encodes fields 1 to 4 as upstream routers read them', () => {
    const msg = ctrlAddressesMessage(view([member('c1', 'tls:h:1')], { version: 2, leader: true }));
    const hex = msg.body.toString('hex');
    // 1: "tls:h:1", 2: 2, 3: true, 4: { 1: "c1", 2: { 1: "tls:h:1" } } (no groups: nothing on the wire)
    assert.equal(msg.body.toString('hex'), '0a07746c733a683a31' + '1002' + '1801' + '220f' + '0a026331' + '1209' + '0a07746c733a683a31');
  });
});

describe('UpdateClusterLeader', () => {
  it('ok/carries the leader epoch as its index', () => {
    const msg = clusterLeaderMessage({ leaderEpoch: () => 42 });
    assert.equal(msg.contentType, CtrlContentType.UpdateClusterLeaderRequest);
    assert.deepEqual(decode('ctrl.UpdateClusterLeader', msg.body), { index: 42n });
  });
});
