/**
 * The router data model from the store: the full state (every entity kind with the fields routers use, upstream's
 * event order, service policy members from the access index, public keys last) and the change sets made from the
 * change feed (creates, updates, deletes, membership added and removed by role changes, creates and deletes, index
 * and previousIndex continuity), checked against a simulated router that applies them as upstream's does.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFullModel, type ModelEvent } from '../../../src/fabric/data-model/full-state.ts';
import { DataStateAction, PolicyType, ServicePolicyRelatedEntityType, TerminatorPrecedence, type DataStateChangeSet, type DataStateEvent } from '../../../src/fabric/proto/edge-ctrl.ts';
import { HOST_V1, Inbox, SimRouter, dataModel, identity, openStore, otherProcess, policy, service, type Received, type Store } from './data-model-fixture.ts';

let store: Store;
before(async () => {
  store = await openStore();
});
after(() => store.close());

const SUB = { currentIndex: 0n, subscriptionDurationSeconds: 300, renew: false, timelineId: '', subscriptionId: 'sub-1' };

function kindOf(e: DataStateEvent | ModelEvent): string {
  for (const k of ['configType', 'config', 'identity', 'service', 'postureCheck', 'servicePolicy', 'servicePolicyChange', 'publicKey'] as const) if (e[k]) return k;
  return '?';
}

function changeSets(received: Received[]): DataStateChangeSet[] {
  return received.flatMap((r) => (r.type === 'changes' ? [r.set] : []));
}

function describeEvents(events: readonly DataStateEvent[]): string[] {
  const action = ['Create', 'Update', 'Delete'];
  return events.map((e) => {
    if (e.servicePolicyChange) {
      const c = e.servicePolicyChange;
      const type = ['?', 'service', 'identity', 'postureCheck'][c.relatedEntityType];
      return `${c.add ? '+' : '-'}${type} ${c.policyId} [${[...c.relatedEntityIds].sort().join(',')}]`;
    }
    const kind = kindOf(e);
    const id = (e as unknown as Record<string, { id?: string; kid?: string }>)[kind]!;
    return `${action[e.action]} ${kind} ${id.id ?? id.kid}`;
  });
}

/** A router subscribed to a fresh model, and a helper that polls and returns what it got. */
async function subscribed(s: Store = store) {
  const dm = dataModel(s);
  const inbox = new Inbox();
  const router = new SimRouter();
  await dm.subscribe('router-1', inbox.send, SUB);
  for (const r of inbox.take()) router.receive(r);
  return {
    dm,
    inbox,
    router,
    /** Polls, applies what came to the simulated router and returns the change sets. */
    async step(): Promise<DataStateChangeSet[]> {
      await dm.poll();
      const got = inbox.take();
      for (const r of got) router.receive(r);
      return changeSets(got);
    },
    /** A router that subscribes now (full state) has the same model as this one. */
    async assertInStep(): Promise<void> {
      const fresh = new Inbox();
      const other = dataModel(s);
      await other.subscribe('router-x', fresh.send, SUB);
      const r = new SimRouter();
      for (const m of fresh.take()) r.receive(m);
      assert.deepEqual(router.snapshot(), r.snapshot());
    },
  };
}

describe('router data model: full state', () => {
  it('holds every kind of entity with the fields routers use, in upstream order', async () => {
    const configType = await store.configTypes.create({ name: 'rdm-type-a', schema: {} });
    const config = await store.configs.create({ name: 'rdm-host-a', configTypeId: HOST_V1, data: { protocol: 'tcp', address: '127.0.0.1', port: 8080 } });
    const svc = await service(store, 'rdm-svc-a', ['web'], { configs: [config] });
    const plain = await service(store, 'rdm-svc-plain', [], { encryptionRequired: false });
    const alice = await identity(store, 'rdm-alice', ['staff'], {
      appData: { team: 'blue' },
      defaultHostingCost: 7,
      defaultHostingPrecedence: 'required',
      serviceHostingCosts: { [svc]: 3 },
      serviceHostingPrecedences: { [svc]: 'failed' },
    });
    await store.store.write((tx) => tx.run('INSERT INTO identity_service_configs (identity_id, service_id, config_type_id, config_id) VALUES (?, ?, ?, ?)', [alice, svc, HOST_V1, config]));
    await store.store.write((tx) => tx.run('UPDATE identities SET disabled_at = ? WHERE id = ?', [new Date().toISOString(), alice]));
    const mac = await store.postureChecks.create({ name: 'rdm-mac', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'], roleAttributes: ['pc'] });
    const os = await store.postureChecks.create({ name: 'rdm-os', typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: ['>=5.0.0'] }] });
    const proc = await store.postureChecks.create({ name: 'rdm-proc', typeId: 'PROCESS', process: { osType: 'Linux', path: '/bin/x', hashes: ['ab'] } });
    const multi = await store.postureChecks.create({ name: 'rdm-multi', typeId: 'PROCESS_MULTI', semantic: 'AnyOf', processes: [{ osType: 'Windows', path: 'C:\\x.exe', signerFingerprints: ['ff'] }] });
    const domain = await store.postureChecks.create({ name: 'rdm-domain', typeId: 'DOMAIN', domains: ['corp'] });
    const mfa = await store.postureChecks.create({ name: 'rdm-mfa', typeId: 'MFA', timeoutSeconds: 60, promptOnWake: true });
    const dial = await policy(store, 'rdm-dial-a', 'Dial', ['#staff'], ['#web'], ['#pc']);
    const bind = await policy(store, 'rdm-bind-a', 'Bind', [`@${alice}`], [`@${svc}`, `@${plain}`]);
    const empty = await policy(store, 'rdm-empty', 'Dial', [], ['#nothing']);

    const key: ModelEvent = { action: DataStateAction.Create, isSynthetic: true, publicKey: { kid: 'controller-key', data: Buffer.from([1]) } };
    const { events } = await readFullModel(store.store, store.access.index, [key]);

    // Upstream's order: kinds in blocks, each policy followed by its members, public keys last.
    const kinds = events.map(kindOf);
    const firstOf = (k: string) => kinds.indexOf(k);
    const lastOf = (k: string) => kinds.lastIndexOf(k);
    assert.ok(lastOf('configType') < firstOf('config') && lastOf('config') < firstOf('identity') && lastOf('identity') < firstOf('service'));
    assert.ok(lastOf('service') < firstOf('postureCheck') && lastOf('postureCheck') < firstOf('servicePolicy') && lastOf('servicePolicyChange') < firstOf('publicKey'));
    assert.ok(events.every((e) => e.action === DataStateAction.Create));

    const byId = <K extends keyof ModelEvent>(k: K, id: string) => events.find((e) => (e[k] as { id?: string } | undefined)?.id === id)?.[k] as NonNullable<ModelEvent[K]>;
    assert.deepEqual(byId('configType', configType), { id: configType, name: 'rdm-type-a' });
    assert.deepEqual(JSON.parse(byId('config', config).dataJson!), { protocol: 'tcp', address: '127.0.0.1', port: 8080 });
    assert.equal(byId('config', config).typeId, HOST_V1);
    assert.deepEqual(byId('service', svc), { id: svc, name: 'rdm-svc-a', encryptionRequired: true, configs: [config] });
    assert.equal(byId('service', plain).encryptionRequired, false);

    const a = byId('identity', alice);
    assert.equal(a.name, 'rdm-alice');
    assert.equal(a.disabled, true);
    assert.equal(a.defaultHostingCost, 7);
    assert.equal(a.defaultHostingPrecedence, TerminatorPrecedence.Required);
    assert.deepEqual(a.serviceHostingCosts, { [svc]: 3 });
    assert.deepEqual(a.serviceHostingPrecedences, { [svc]: TerminatorPrecedence.Failed });
    assert.deepEqual(JSON.parse(Buffer.from(a.appDataJson!).toString()), { team: 'blue' });
    assert.deepEqual(a.serviceConfigs, { [svc]: { configs: { [HOST_V1]: config } } });

    assert.deepEqual(byId('postureCheck', mac).mac, { macAddresses: ['001122334455'] });
    assert.equal(byId('postureCheck', mac).typeId, 'MAC');
    assert.deepEqual(byId('postureCheck', os).osList, { osList: [{ osType: 'Linux', osVersions: ['>=5.0.0'] }] });
    assert.deepEqual(byId('postureCheck', proc).process, { osType: 'Linux', path: '/bin/x', hashes: ['ab'], fingerprints: [] });
    assert.deepEqual(byId('postureCheck', multi).processMulti, { semantic: 'AnyOf', processes: [{ osType: 'Windows', path: 'C:\\x.exe', hashes: [], fingerprints: ['ff'] }] });
    assert.deepEqual(byId('postureCheck', domain).domains, { domains: ['corp'] });
    assert.deepEqual(byId('postureCheck', mfa).mfa, { timeoutSeconds: 60n, promptOnWake: true, promptOnUnlock: false, ignoreLegacyEndpoints: false });

    // Each policy, then its services, posture checks and (when it has some) identities, all added.
    const at = events.findIndex((e) => e.servicePolicy?.id === dial);
    assert.deepEqual(events[at]!.servicePolicy, { id: dial, name: 'rdm-dial-a', policyType: PolicyType.Dial });
    assert.deepEqual(events[at + 1]!.servicePolicyChange, { policyId: dial, relatedEntityIds: [svc], relatedEntityType: ServicePolicyRelatedEntityType.RelatedService, add: true });
    assert.deepEqual(events[at + 2]!.servicePolicyChange, { policyId: dial, relatedEntityIds: [mac], relatedEntityType: ServicePolicyRelatedEntityType.RelatedPostureCheck, add: true });
    assert.deepEqual(events[at + 3]!.servicePolicyChange, { policyId: dial, relatedEntityIds: [alice], relatedEntityType: ServicePolicyRelatedEntityType.RelatedIdentity, add: true });
    const b = events.findIndex((e) => e.servicePolicy?.id === bind);
    assert.equal(events[b]!.servicePolicy!.policyType, PolicyType.Bind);
    assert.deepEqual(events[b + 1]!.servicePolicyChange!.relatedEntityIds, [svc, plain].sort());
    assert.deepEqual(events[b + 3]!.servicePolicyChange!.relatedEntityIds, [alice]);
    const e = events.findIndex((x) => x.servicePolicy?.id === empty);
    assert.deepEqual(events[e + 1]!.servicePolicyChange!.relatedEntityIds, []);
    assert.deepEqual(events[e + 2]!.servicePolicyChange!.relatedEntityIds, []);
    assert.ok(!events[e + 3]?.servicePolicyChange, 'no identity event for a policy without identities');

    const keys = events.filter((x) => x.publicKey);
    assert.equal(keys[0], key, 'the controller keys come first among the public keys');
    assert.ok(keys.every((x) => x.isSynthetic));
  });

  it('is sent as the DataState a new subscription gets: end index, timeline and subscription id', async () => {
    const dm = dataModel(store);
    const inbox = new Inbox();
    await dm.subscribe('router-a', inbox.send, { ...SUB, subscriptionId: 'sub-a' });
    const [got] = inbox.take();
    assert.ok(got?.type === 'state');
    assert.equal(got.subscriptionId, 'sub-a');
    assert.equal(got.state.timelineId, 'timeline-1');
    const head = (await store.store.value<number>('SELECT MAX(seq) FROM change_feed'))!;
    assert.equal(got.state.endIndex, BigInt(head));
    assert.equal(dm.currentIndex(), BigInt(head));
  });
});

describe('router data model: change sets', () => {
  it('sends creates in dependency order, with the members they bring, indexed by the feed', async () => {
    const r = await subscribed();
    const start = r.router.index;
    const configType = await store.configTypes.create({ name: 'cs-type', schema: {} });
    const config = await store.configs.create({ name: 'cs-config', configTypeId: configType, data: { a: 1 } });
    const svc = await service(store, 'cs-svc', ['cs'], { configs: [config] });
    const id = await identity(store, 'cs-id', ['cs']);
    const pc = await store.postureChecks.create({ name: 'cs-pc', typeId: 'DOMAIN', domains: ['x'], roleAttributes: ['cs'] });
    const pol = await policy(store, 'cs-pol', 'Dial', ['#cs'], ['#cs'], ['#cs']);
    const sets = await r.step();
    assert.equal(sets.length, 1, 'one poll, one change set');
    const [set] = sets;
    assert.equal(set!.previousIndex, start);
    assert.equal(set!.index, BigInt((await store.store.value<number>("SELECT MAX(seq) FROM change_feed WHERE kind = 'servicePolicy'"))!));
    assert.deepEqual(describeEvents(set!.changes), [
      `Create configType ${configType}`,
      `Create config ${config}`,
      `Create identity ${id}`,
      `Create service ${svc}`,
      `Create postureCheck ${pc}`,
      `Create servicePolicy ${pol}`,
      `+service ${pol} [${svc}]`,
      `+postureCheck ${pol} [${pc}]`,
      `+identity ${pol} [${id}]`,
    ]);
    await r.assertInStep();
  });

  it('sends updates of every kind, and nothing for writes routers do not see', async () => {
    const r = await subscribed();
    const svc = await service(store, 'up-svc');
    const id = await identity(store, 'up-id');
    const config = await store.configs.create({ name: 'up-config', configTypeId: HOST_V1, data: { protocol: 'tcp', address: 'a', port: 1 } });
    const pc = await store.postureChecks.create({ name: 'up-pc', typeId: 'MAC', macAddresses: ['001122334455'] });
    const pol = await policy(store, 'up-pol', 'Dial', [], []);
    await r.step();

    await store.identities.update(id, { appData: { x: 1 }, defaultHostingCost: 9 }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update identity ${id}`]);
    assert.deepEqual(JSON.parse(Buffer.from((r.router.identities.get(id) as { appDataJson: Uint8Array }).appDataJson).toString()), { x: 1 });

    await store.store.write((tx) => tx.run('UPDATE identities SET disabled_at = ? WHERE id = ?', [new Date().toISOString(), id]));
    const [disabled] = await r.step();
    assert.equal(disabled!.changes[0]!.identity!.disabled, true);

    await store.store.write((tx) => tx.run('INSERT INTO identity_service_configs (identity_id, service_id, config_type_id, config_id) VALUES (?, ?, ?, ?)', [id, svc, HOST_V1, config]));
    assert.deepEqual((await r.step())[0]!.changes[0]!.identity!.serviceConfigs, { [svc]: { configs: { [HOST_V1]: config } } });

    await store.services.update(svc, { configs: [config] }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update service ${svc}`]);
    assert.deepEqual((r.router.services.get(svc) as { configs: string[] }).configs, [config]);

    await store.configs.update(config, { data: { protocol: 'tcp', address: 'b', port: 2 } }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update config ${config}`]);

    await store.postureChecks.update(pc, { macAddresses: ['aabbccddeeff'] }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update postureCheck ${pc}`]);

    await store.policies.update(pol, { name: 'up-pol-renamed' }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update servicePolicy ${pol}`]);

    // Writes routers do not see add no change set.
    await store.store.write((tx) => tx.run('UPDATE identities SET sdk_info = ?, updated_at = ? WHERE id = ?', ['{"v":1}', new Date().toISOString(), id]));
    await store.store.write((tx) => tx.run('UPDATE services SET max_idle_time_millis = 5 WHERE id = ?', [svc]));
    assert.deepEqual(await r.step(), []);
    await r.assertInStep();
  });

  it('adds and removes members when roles of identities, services, posture checks or the policy change', async () => {
    const r = await subscribed();
    const alice = await identity(store, 'mem-alice', ['mem-a']);
    const bob = await identity(store, 'mem-bob');
    const svc = await service(store, 'mem-svc', ['mem-s']);
    const pc = await store.postureChecks.create({ name: 'mem-pc', typeId: 'DOMAIN', domains: ['d'] });
    const pol = await policy(store, 'mem-pol', 'Bind', ['#mem-a'], ['#mem-s'], ['#mem-p']);
    await r.step();
    assert.deepEqual([...r.router.policies.get(pol)!.identities], [alice]);

    await store.identities.update(bob, { roleAttributes: ['mem-a'] }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update identity ${bob}`, `+identity ${pol} [${bob}]`]);

    await store.identities.update(alice, { roleAttributes: [] }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update identity ${alice}`, `-identity ${pol} [${alice}]`]);

    await store.postureChecks.update(pc, { roleAttributes: ['mem-p'] }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update postureCheck ${pc}`, `+postureCheck ${pol} [${pc}]`]);

    await store.services.update(svc, { roleAttributes: [] }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update service ${svc}`, `-service ${pol} [${svc}]`]);

    await store.policies.update(pol, { serviceRoles: [`@${svc}`], identityRoles: [`@${alice}`] }, 'patch');
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update servicePolicy ${pol}`, `-identity ${pol} [${bob}]`, `+service ${pol} [${svc}]`, `+identity ${pol} [${alice}]`]);

    await store.policies.update(pol, { type: 'Dial' }, 'patch');
    const [typed] = await r.step();
    assert.equal(typed!.changes[0]!.servicePolicy!.policyType, PolicyType.Dial);
    await r.assertInStep();
  });

  it('compares a policy\'s members only in the role lists whose roles or semantic a write changed', async () => {
    const alice = await identity(store, 'cmp-alice', ['cmp-a']);
    const bob = await identity(store, 'cmp-bob', ['cmp-b']);
    const svc = await service(store, 'cmp-svc', ['cmp-s']);
    const everyone = await policy(store, 'cmp-all', 'Dial', ['#all'], ['#cmp-s']);
    const pol = await policy(store, 'cmp-pol', 'Dial', ['#cmp-a'], ['#cmp-s']);
    // The access index, counting which policies' members the data model looks at.
    const looked = new Map<string, string[]>();
    const membership = {
      membersOf(policyId: string, field: 'identityRoles' | 'serviceRoles' | 'postureCheckRoles') {
        looked.set(policyId, [...(looked.get(policyId) ?? []), field]);
        return store.access.index.membersOf(policyId, field);
      },
    };
    const dm = dataModel(store, { access: { catchUp: () => store.access.catchUp() || undefined, membership: () => membership } });
    const inbox = new Inbox();
    const router = new SimRouter();
    const step = async () => {
      looked.clear();
      await dm.poll();
      const got = inbox.take();
      for (const r of got) router.receive(r);
      return changeSets(got);
    };
    await dm.subscribe('router-cmp', inbox.send, SUB);
    for (const r of inbox.take()) router.receive(r);
    try {
      await store.policies.update(everyone, { name: 'cmp-all-renamed' }, 'patch');
      assert.deepEqual(describeEvents((await step())[0]!.changes), [`Update servicePolicy ${everyone}`]);
      assert.equal(looked.get(everyone), undefined, 'a rename looks at no member of the #all policy');

      await store.policies.update(pol, { name: 'cmp-pol-renamed', type: 'Bind' }, 'patch');
      assert.deepEqual(describeEvents((await step())[0]!.changes), [`Update servicePolicy ${pol}`]);
      assert.equal(looked.get(pol), undefined, 'nor does a change of type');

      await store.policies.update(pol, { identityRoles: ['#cmp-b'] }, 'patch');
      assert.deepEqual(describeEvents((await step())[0]!.changes), [`Update servicePolicy ${pol}`, `-identity ${pol} [${alice}]`, `+identity ${pol} [${bob}]`]);
      assert.deepEqual(looked.get(pol), ['identityRoles'], 'only the role list that changed');

      await store.policies.update(pol, { semantic: 'AllOf', identityRoles: ['#cmp-a', '#cmp-b'] }, 'patch');
      assert.deepEqual(describeEvents((await step())[0]!.changes), [`Update servicePolicy ${pol}`, `-identity ${pol} [${bob}]`]);
      assert.deepEqual(looked.get(pol), ['serviceRoles', 'postureCheckRoles', 'identityRoles'], 'the semantic decides every list');

      // Entities that change in the same batch as a rename still move.
      await store.identities.update(alice, { roleAttributes: ['cmp-a', 'cmp-b'] }, 'patch');
      await store.policies.update(pol, { name: 'cmp-pol-again' }, 'patch');
      await store.services.update(svc, { roleAttributes: [] }, 'patch');
      const mixed = describeEvents((await step())[0]!.changes);
      assert.deepEqual(mixed.slice(0, 3), [`Update identity ${alice}`, `Update service ${svc}`, `Update servicePolicy ${pol}`]);
      assert.deepEqual(mixed.slice(3).sort(), [`+identity ${pol} [${alice}]`, `-service ${everyone} [${svc}]`, `-service ${pol} [${svc}]`].sort());
      const fresh = new Inbox();
      await dataModel(store).subscribe('router-cmp-fresh', fresh.send, SUB);
      const other = new SimRouter();
      for (const r of fresh.take()) other.receive(r);
      assert.deepEqual(router.snapshot(), other.snapshot());
    } finally {
      // What later tests look at stays as they expect it.
      for (const p of [everyone, pol]) await store.policies.remove(p);
      for (const i of [alice, bob]) await store.identities.remove(i);
      await store.services.remove(svc);
    }
  });

  it('takes deleted entities out of their policies before deleting them, and deletes in reverse dependency order', async () => {
    const r = await subscribed();
    const config = await store.configs.create({ name: 'del-config', configTypeId: HOST_V1, data: { protocol: 'tcp', address: 'a', port: 1 } });
    const svc = await service(store, 'del-svc', ['del'], { configs: [config] });
    const id = await identity(store, 'del-id', ['del']);
    await store.store.write((tx) => tx.run('INSERT INTO identity_service_configs (identity_id, service_id, config_type_id, config_id) VALUES (?, ?, ?, ?)', [id, svc, HOST_V1, config]));
    const pc = await store.postureChecks.create({ name: 'del-pc', typeId: 'DOMAIN', domains: ['d'], roleAttributes: ['del'] });
    const pol = await policy(store, 'del-pol', 'Dial', ['#del'], ['#del'], ['#del']);
    const byId = await policy(store, 'del-pol-ids', 'Bind', [`@${id}`], [`@${svc}`]);
    await r.step();

    await store.identities.remove(id);
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [
      `Update servicePolicy ${byId}`,
      `-identity ${pol} [${id}]`,
      `-identity ${byId} [${id}]`,
      `Delete identity ${id}`,
    ]);

    // A deleted config leaves the services and overrides using it: those updates come before its delete.
    await store.configs.remove(config);
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update service ${svc}`, `Delete config ${config}`]);

    await store.postureChecks.remove(pc);
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`-postureCheck ${pol} [${pc}]`, `Delete postureCheck ${pc}`]);

    await store.services.remove(svc);
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update servicePolicy ${byId}`, `-service ${pol} [${svc}]`, `-service ${byId} [${svc}]`, `Delete service ${svc}`]);

    await store.policies.remove(pol);
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Delete servicePolicy ${pol}`]);

    const ct = await store.configTypes.create({ name: 'del-type', schema: {} });
    await r.step();
    await store.configTypes.remove(ct);
    assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Delete configType ${ct}`]);
    await r.assertInStep();
  });

  it('chains indexes: each set names the one before, strictly increasing, the first names the full state', async () => {
    const r = await subscribed();
    const indexes = [r.router.index];
    for (let i = 0; i < 5; i++) {
      await identity(store, `chain-${i}`);
      await store.store.write((tx) => tx.run("INSERT INTO change_feed (kind, entity_id, op, origin, created_at) VALUES ('apiSession', 'x', 'set', '', '2026-01-01T00:00:00.000Z')"));
      const [set] = await r.step();
      assert.equal(set!.previousIndex, indexes[indexes.length - 1]);
      assert.ok(set!.index > set!.previousIndex);
      indexes.push(set!.index);
    }
    assert.equal(r.router.gaps, 0);
    assert.equal(r.dm.currentIndex(), indexes[indexes.length - 1]);
  });

  it('follows writes another process makes (its access rows and the store triggers)', async () => {
    const r = await subscribed();
    const other = await otherProcess(store);
    try {
      const svc = await service(other, 'op-svc', ['op']);
      const id = await identity(other, 'op-id', ['op']);
      const pol = await policy(other, 'op-pol', 'Dial', ['#op'], ['#op']);
      await r.step();
      assert.deepEqual([...r.router.policies.get(pol)!.identities], [id]);
      await other.identities.update(id, { roleAttributes: [] }, 'patch');
      await other.identities.update(id, { name: 'op-id-renamed' }, 'patch');
      assert.deepEqual(describeEvents((await r.step())[0]!.changes), [`Update identity ${id}`, `-identity ${pol} [${id}]`]);
      assert.equal((r.router.identities.get(id) as { name: string }).name, 'op-id-renamed');
      await other.services.remove(svc);
      await r.step();
      await r.assertInStep();
    } finally {
      await other.close();
    }
  });

  it('ends up where a fresh full state is after a mixed run of writes', async () => {
    const r = await subscribed();
    const ids: string[] = [];
    const svcs: string[] = [];
    const pols: string[] = [];
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    for (let i = 0; i < 60; i++) {
      const op = rnd(8);
      if (op === 0 || ids.length < 2) ids.push(await identity(store, `mix-id-${i}`, rnd(2) ? ['mix-a'] : ['mix-b']));
      else if (op === 1 || svcs.length < 2) svcs.push(await service(store, `mix-svc-${i}`, rnd(2) ? ['mix-a'] : []));
      else if (op === 2 || pols.length < 2) pols.push(await policy(store, `mix-pol-${i}`, rnd(2) ? 'Dial' : 'Bind', rnd(2) ? ['#mix-a'] : [`@${ids[rnd(ids.length)]}`], rnd(2) ? ['#mix-a'] : ['#all']));
      else if (op === 3) await store.identities.update(ids[rnd(ids.length)]!, { roleAttributes: rnd(2) ? ['mix-a'] : ['mix-b'] }, 'patch');
      else if (op === 4 && ids.length > 2) await store.identities.remove(ids.splice(rnd(ids.length), 1)[0]!);
      else if (op === 5 && svcs.length > 2) await store.services.remove(svcs.splice(rnd(svcs.length), 1)[0]!);
      else if (op === 6 && pols.length > 2) await store.policies.remove(pols.splice(rnd(pols.length), 1)[0]!);
      else await store.policies.update(pols[rnd(pols.length)]!, { identityRoles: rnd(2) ? ['#mix-b'] : ['#all'] }, 'patch');
      if (rnd(3) === 0) await r.step();
    }
    await r.step();
    assert.equal(r.router.gaps, 0);
    await r.assertInStep();
  });

  it('loads the model again and sends the full state when the access index is rebuilt', async () => {
    const r = await subscribed();
    await identity(store, 'reload-id');
    await store.store.write((tx) => store.feed.append(tx, 'all', '*', 'reload'));
    await r.dm.poll();
    const got = r.inbox.take();
    assert.equal(got.length, 1);
    assert.equal(got[0]!.type, 'state');
  });
});
