/**
 * Where a full router data model state goes, measured in-process (bench/fabric-scale.ts runs it on its copy of the
 * dataset after the child controller stopped): a controller started in this process on the data directory, then,
 * inside one read snapshot of the store as the data model reads it, each step of src/fabric/data-model/full-state.ts timed on
 * its own (the entity reads, the copies and sorts of the policy members from the access index), the whole
 * `readFullModel`, the encoding of the DataState, the encoded bytes by kind of event, and the heap the model keeps
 * between changes (what routers were told: `TrackedModel`, and the encoded state while it is current).
 * Timings: the median of ROUNDS rounds (the first warms up the code).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ServicePolicyRelatedEntityType, type DataStateEvent } from '../src/fabric/proto/edge-ctrl.ts';
import { percentileOf } from './lib.ts';

const ROUNDS = 3;

export interface FullStateProfile {
  rounds: number;
  /** Median ms per step. */
  steps: Array<{ step: string; ms: number }>;
  /** Encoded bytes and events per kind of event. */
  bytes: Array<{ kind: string; events: number; ids?: number; bytes: number }>;
  totalBytes: number;
  totalEvents: number;
  /** Identity ids in service policy member lists (the full state's bulk). */
  identityMemberIds: number;
  /** Heap kept by what routers were told (tracked ids and members), MB; undefined when gc() is not available. */
  trackedHeapMb?: number;
}

/** A gc() function: node's --expose-gc, set at run time (V8 reads the flag when a context is created). */
function gcFunction(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
}

export async function profileFullState(dataDir: string): Promise<FullStateProfile> {
  const [{ startController }, { loadConfig }, { BENCH_ADMIN_PASSWORD }, modelStore, { readFullModel }, { encode }] = await Promise.all([
    import('../src/controller.ts'),
    import('../src/config.ts'),
    import('./datasets/identities.ts'),
    import('../src/fabric/data-model/model-store.ts'),
    import('../src/fabric/data-model/full-state.ts'),
    import('../src/fabric/proto/index.ts'),
  ]);
  const controller = await startController(
    loadConfig(['--data-dir', dataDir, '--address', '127.0.0.1', '--port', '0', '--admin-password', BENCH_ADMIN_PASSWORD, '--log-level', 'silent'], {}),
  );
  try {
    const { store } = controller;
    const access = controller.services.access;
    const times = new Map<string, number[]>();
    const time = async <T>(step: string, f: () => T | Promise<T>): Promise<T> => {
      const t0 = performance.now();
      const out = await f();
      const list = times.get(step) ?? [];
      list.push(performance.now() - t0);
      times.set(step, list);
      return out;
    };
    let events: Array<Partial<DataStateEvent>> = [];
    let totalBytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // The catch-up reads the change feed in a snapshot of its own: just before this round's (snapshots do not nest).
      await time('access index catch-up', () => access.catchUp());
      await store.snapshot(async (q) => {
        await time('read identities', () => modelStore.readIdentities(q));
        await time('read services', () => modelStore.readServices(q));
        await time('read config types, configs, posture checks, CA keys', async () => {
          await modelStore.readConfigTypes(q);
          await modelStore.readConfigs(q);
          await modelStore.readPostureChecks(q);
          await modelStore.readCaKeys(q);
        });
        const policies = await time('read service policies', () => modelStore.readServicePolicies(q));
        const members = await time('copy policy members from the access index (Sets)', () =>
          policies.map((p) => ['serviceRoles', 'postureCheckRoles', 'identityRoles'].map((f) => new Set(access.index.membersOf(p.id!, f as 'serviceRoles')))),
        );
        await time('sort policy members', () => members.map((m) => m.map((set) => [...set].sort())));
        const full = await time('readFullModel (all of the above)', () => readFullModel(q, access.index, []));
        const body = await time('encode the DataState', () => encode('edge.DataState', { events: full.events, endIndex: 1n, timelineId: 'profile' }));
        events = full.events as Array<Partial<DataStateEvent>>;
        totalBytes = body.length;
      });
    }

    // Bytes by kind of event: each group encoded as a DataState of its own (a few bytes of framing each).
    const groups = new Map<string, Array<Partial<DataStateEvent>>>();
    const memberKind: Record<number, string> = {
      [ServicePolicyRelatedEntityType.RelatedService]: 'policy members: services',
      [ServicePolicyRelatedEntityType.RelatedPostureCheck]: 'policy members: posture checks',
      [ServicePolicyRelatedEntityType.RelatedIdentity]: 'policy members: identities',
    };
    for (const e of events) {
      const kind = e.servicePolicyChange
        ? (memberKind[e.servicePolicyChange.relatedEntityType!] ?? 'policy members: other')
        : (Object.keys(e).find((k) => k !== 'action' && k !== 'isSynthetic' && (e as Record<string, unknown>)[k] !== undefined) ?? 'other');
      const list = groups.get(kind) ?? [];
      list.push(e);
      groups.set(kind, list);
    }
    const bytes = [...groups].map(([kind, list]) => {
      const ids = list[0]?.servicePolicyChange ? list.reduce((a, e) => a + (e.servicePolicyChange?.relatedEntityIds?.length ?? 0), 0) : undefined;
      return { kind, events: list.length, ...(ids !== undefined ? { ids } : {}), bytes: encode('edge.DataState', { events: list as DataStateEvent[] }).length };
    });
    bytes.sort((a, b) => b.bytes - a.bytes);

    // The heap the model keeps: the tracked ids and members of one readFullModel, kept, after full collections.
    let trackedHeapMb: number | undefined;
    const gc = gcFunction();
    if (gc) {
      events = [];
      gc();
      gc();
      const before = process.memoryUsage().heapUsed;
      const kept = await store.snapshot(async (q) => (await readFullModel(q, access.index, [])).tracked);
      gc();
      gc();
      trackedHeapMb = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
      if (kept.identities.size < 0) console.log(''); // keeps `kept` alive up to here
    }

    return {
      rounds: ROUNDS,
      steps: [...times].map(([step, list]) => ({ step, ms: percentileOf([...list].sort((a, b) => a - b), 50) })),
      bytes,
      totalBytes,
      totalEvents: bytes.reduce((a, b) => a + b.events, 0),
      identityMemberIds: bytes.find((b) => b.kind === 'policy members: identities')?.ids ?? 0,
      ...(trackedHeapMb !== undefined ? { trackedHeapMb } : {}),
    };
  } finally {
    await controller.stop();
  }
}
