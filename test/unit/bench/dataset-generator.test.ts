/**
 * The sized benchmark datasets: the pure generator for every size (exact entity and policy counts, exact
 * attribute spread, the single `#all` Dial policy, the worst-case entities in every policy and sorting
 * last, determinism), and the loader on the small size: records created through the controller's services,
 * the marker reused, and the probes confirmed over HTTPS by the dataset's own users.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ATTRIBUTE_FRACTIONS,
  DEFAULT_SEED,
  SIZES,
  SIZE_NAMES,
  WORST_NAMES,
  accessModel,
  attributeCount,
  attributeName,
  ensureSizedDataset,
  generateDataset,
  roleMatches,
  type EntityKind,
  type EntityRecord,
  type GeneratedDataset,
  type SizeName,
} from '../../../bench/datasets/sized.ts';
import { startController } from '../../../src/controller.ts';
import { loadConfig } from '../../../src/config.ts';
import { createClient } from '../../support/client.ts';
import { assertMatchesReference } from '../../support/reference-spec.ts';

const datasets = new Map<SizeName, GeneratedDataset>(SIZE_NAMES.map((size) => [size, generateDataset(size)]));

function entitiesOf(d: GeneratedDataset, kind: EntityKind): EntityRecord[] {
  return kind === 'identity' ? d.identities : kind === 'service' ? d.services : d.edgeRouters;
}

const KINDS: EntityKind[] = ['identity', 'service', 'edgeRouter'];

describe('sized dataset generator', () => {
  test('the sizes are upstream perf-test sizes', () => {
    assert.deepEqual(SIZES.small, { services: 20, identities: 100, edgeRouters: 10, servicePolicies: 10, edgeRouterPolicies: 10, serviceEdgeRouterPolicies: 10 });
    assert.deepEqual(SIZES.medium, { services: 100, identities: 5000, edgeRouters: 100, servicePolicies: 50, edgeRouterPolicies: 50, serviceEdgeRouterPolicies: 25 });
    assert.deepEqual(SIZES.large, { services: 2000, identities: 100000, edgeRouters: 500, servicePolicies: 250, edgeRouterPolicies: 250, serviceEdgeRouterPolicies: 100 });
    assert.deepEqual(SIZES['many-services'], {
      services: 10000,
      identities: 16000,
      edgeRouters: 100,
      servicePolicies: 100,
      edgeRouterPolicies: 100,
      serviceEdgeRouterPolicies: 100,
    });
    assert.deepEqual([...ATTRIBUTE_FRACTIONS], [1 / 2, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 8, 1 / 10, 1 / 10]);
  });

  test('an unknown size is refused', () => {
    assert.throws(() => generateDataset('huge' as SizeName), /unknown dataset size huge/);
  });

  for (const size of SIZE_NAMES) {
    describe(size, () => {
      const d = datasets.get(size)!;
      const spec = SIZES[size];

      test('exact counts, unique names', () => {
        assert.equal(d.size, size);
        assert.equal(d.seed, DEFAULT_SEED);
        assert.equal(d.identities.length, spec.identities);
        assert.equal(d.services.length, spec.services);
        assert.equal(d.edgeRouters.length, spec.edgeRouters);
        assert.equal(d.servicePolicies.length, spec.servicePolicies);
        assert.equal(d.edgeRouterPolicies.length, spec.edgeRouterPolicies);
        assert.equal(d.serviceEdgeRouterPolicies.length, spec.serviceEdgeRouterPolicies);
        const names = [...d.identities, ...d.services, ...d.edgeRouters, ...d.servicePolicies, ...d.edgeRouterPolicies, ...d.serviceEdgeRouterPolicies].map((r) => r.name);
        assert.equal(new Set(names).size, names.length);
      });

      test('attribute k is carried by exactly round(n × fraction_k) entities of each kind, and nothing else', () => {
        for (const kind of KINDS) {
          const list = entitiesOf(d, kind);
          const n = list.length;
          const carried = new Map<string, number>();
          for (const e of list) {
            assert.deepEqual(e.roleAttributes, [...new Set(e.roleAttributes)].sort(), `${e.name}: sorted and unique`);
            for (const a of e.roleAttributes) carried.set(a, (carried.get(a) ?? 0) + 1);
          }
          const expected = new Map(ATTRIBUTE_FRACTIONS.map((f, i) => [attributeName(kind, i + 1), Math.round(n * f)]));
          assert.deepEqual(carried, expected, `${size} ${kind}`);
          for (let k = 1; k <= 8; k++) assert.equal(attributeCount(n, k), expected.get(attributeName(kind, k)));
          // The two halves are complementary: every entity has one of them.
          for (const e of list) assert.ok(e.roleAttributes.includes(attributeName(kind, 1)) || e.roleAttributes.includes(attributeName(kind, 2)), e.name);
        }
      });

      test('the worst-case entities sort last', () => {
        for (const kind of KINDS) {
          const list = entitiesOf(d, kind);
          const sorted = list.map((e) => e.name).sort();
          assert.equal(sorted.at(-1), WORST_NAMES[kind]);
          assert.equal(list.at(-1)!.name, WORST_NAMES[kind]);
        }
      });

      test('exactly one #all Dial service policy', () => {
        const withAll = d.servicePolicies.filter((p) => p.identityRoles.includes('#all'));
        assert.equal(withAll.length, 1);
        assert.equal(withAll[0]!.type, 'Dial');
        assert.deepEqual(withAll[0]!.identityRoles, ['#all']);
        assert.equal(withAll[0]!.name, d.allDialPolicyName);
        for (const p of [...d.servicePolicies, ...d.serviceEdgeRouterPolicies]) assert.ok(!p.serviceRoles.includes('#all'), p.name);
        for (const p of [...d.edgeRouterPolicies, ...d.serviceEdgeRouterPolicies]) assert.ok(!p.edgeRouterRoles.includes('#all'), p.name);
        for (const p of d.edgeRouterPolicies) assert.ok(!p.identityRoles.includes('#all'), p.name);
      });

      test('the worst-case identity is named in every service and edge router policy (the #all one includes it)', () => {
        const ref = `@${WORST_NAMES.identity}`;
        for (const p of [...d.servicePolicies, ...d.edgeRouterPolicies]) {
          assert.ok(p.identityRoles.includes(ref) || (p.name === d.allDialPolicyName && p.identityRoles[0] === '#all'), p.name);
        }
        for (const p of [...d.servicePolicies, ...d.serviceEdgeRouterPolicies]) assert.ok(p.serviceRoles.includes(`@${WORST_NAMES.service}`), p.name);
        for (const p of [...d.edgeRouterPolicies, ...d.serviceEdgeRouterPolicies]) assert.ok(p.edgeRouterRoles.includes(`@${WORST_NAMES.edgeRouter}`), p.name);
      });

      test('role lists name only existing attributes and entities; AnyOf/AllOf and Dial/Bind mixed', () => {
        const valid = (kind: EntityKind, roles: string[]) => {
          const names = new Set(entitiesOf(d, kind).map((e) => e.name));
          for (const r of roles) {
            if (r === '#all') continue;
            if (r.startsWith('@')) assert.ok(names.has(r.slice(1)), r);
            else assert.match(r, new RegExp(`^#${attributeName(kind, 0).replace('0', '[1-8]')}$`));
          }
        };
        for (const p of d.servicePolicies) valid('identity', p.identityRoles), valid('service', p.serviceRoles);
        for (const p of d.edgeRouterPolicies) valid('identity', p.identityRoles), valid('edgeRouter', p.edgeRouterRoles);
        for (const p of d.serviceEdgeRouterPolicies) valid('service', p.serviceRoles), valid('edgeRouter', p.edgeRouterRoles);
        for (const list of [d.servicePolicies, d.edgeRouterPolicies, d.serviceEdgeRouterPolicies]) {
          assert.deepEqual(new Set(list.map((p) => p.semantic)), new Set(['AnyOf', 'AllOf']));
        }
        assert.deepEqual(new Set(d.servicePolicies.map((p) => p.type)), new Set(['Dial', 'Bind']));
      });

      test('the worst-case identity sees every service; the typical one a proper subset', () => {
        const model = accessModel(d);
        assert.equal(d.worstServiceCount, spec.services);
        assert.equal(model.visibleServices(d.identities.length - 1).size, spec.services);
        const typical = d.identities.findIndex((e) => e.name === d.typicalIdentityName);
        assert.ok(typical >= 0 && typical < d.identities.length - 1);
        assert.equal(model.visibleServices(typical).size, d.typicalServiceCount);
        assert.ok(d.typicalServiceCount > 0 && d.typicalServiceCount < spec.services / 2, `typical sees ${d.typicalServiceCount} of ${spec.services}`);
        // Everyone gets the #all policy's services: a tenth of them (attribute 8) plus the worst-case service.
        const allPolicy = d.servicePolicies.find((p) => p.name === d.allDialPolicyName)!;
        const viaAll = d.services.filter((s) => roleMatches(allPolicy.serviceRoles, allPolicy.semantic, s)).length;
        assert.ok(viaAll >= attributeCount(spec.services, 8) && viaAll <= d.typicalServiceCount, `${viaAll}`);
      });
    });
  }

  test('deterministic: the same seed gives the same records, another seed other ones', () => {
    for (const size of SIZE_NAMES) assert.deepEqual(generateDataset(size), datasets.get(size), size);
    const other = generateDataset('medium', 12345);
    assert.equal(other.seed, 12345);
    assert.notDeepEqual(other.identities, datasets.get('medium')!.identities);
    assert.deepEqual(generateDataset('medium', 12345), other);
  });
});

describe('sized dataset loader (small)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portcullis-sized-'));
  const dataDir = join(dir, 'small');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const logs: string[] = [];
  const loaded = await ensureSizedDataset('small', { dataDir, log: (l) => logs.push(l) });

  test('loads through the controller and writes dataset.json', () => {
    assert.equal(loaded.reused, false);
    const marker = JSON.parse(readFileSync(join(dataDir, 'dataset.json'), 'utf8'));
    assert.deepEqual(marker.counts, SIZES.small);
    assert.equal(marker.size, 'small');
    assert.equal(marker.seed, DEFAULT_SEED);
    assert.ok(typeof marker.loadMs === 'number' && marker.loadMs >= 0);
    assert.deepEqual(
      marker.users.map((u: { role: string }) => u.role),
      ['typical', 'worst'],
    );
    assert.equal(marker.certUsers.length, 4);
    assert.equal(marker.probes.worstServiceCount, 20);
    assert.equal(marker.probes.typicalServiceCount, datasets.get('small')!.typicalServiceCount);
    assert.ok(logs.some((l) => /loaded in/.test(l)));
  });

  test('a matching marker is reused', async () => {
    const again = await ensureSizedDataset('small', { dataDir, log: () => {} });
    assert.equal(again.reused, true);
    assert.deepEqual(again.probes, loaded.probes);
  });

  test('the dataset works over the APIs: counts, the #all policy, users and probes', async () => {
    const controller = await startController(loadConfig(['--data-dir', dataDir, '--address', '127.0.0.1', '--port', '0', '--log-level', 'silent'], {}));
    try {
      const http = createClient(`https://localhost:${controller.port}`, controller.pki.caBundlePem);
      const admin = await http.post('/edge/management/v1/authenticate?method=password', { username: loaded.adminUser, password: loaded.adminPassword });
      assert.equal(admin.status, 200);
      const mgmt = http.as({ token: admin.body.data.token });
      const identities = await mgmt.get(`/edge/management/v1/identities?filter=${encodeURIComponent('name contains "identity"')}&limit=1`);
      assert.equal(identities.status, 200);
      assert.equal(identities.body.meta.pagination.totalCount, SIZES.small.identities);
      for (const [path, n] of [
        ['services', 20],
        ['edge-routers', 10],
        ['service-policies', 10],
        ['service-edge-router-policies', 10],
      ] as const) {
        const r = await mgmt.get(`/edge/management/v1/${path}?limit=1`);
        assert.equal(r.body.meta.pagination.totalCount, n, path);
      }
      const all = await mgmt.get(`/edge/management/v1/service-policies/${loaded.probes.allDialPolicyId}`);
      assert.equal(all.status, 200);
      // Empty role lists are null on the wire, as upstream.
      assertMatchesReference('management', 'get', '/service-policies/{id}', 200, all.body, { allowNullAt: ['/data/postureCheckRoles'] });
      assert.deepEqual(all.body.data.identityRoles, ['#all']);
      assert.equal(all.body.data.type, 'Dial');

      const expected = { typical: loaded.probes.typicalServiceCount, worst: loaded.probes.worstServiceCount };
      for (const user of loaded.users) {
        const login = await http.post('/edge/client/v1/authenticate?method=password', { username: user.username, password: user.password });
        assert.equal(login.status, 200, user.username);
        assert.equal(login.body.data.identityId, user.identityId);
        const services = await http.as({ token: login.body.data.token }).get('/edge/client/v1/services?limit=500');
        assert.equal(services.status, 200);
        assertMatchesReference('client', 'get', '/services', 200, services.body, { allowNullAt: ['/data/*/configs', '/data/*/roleAttributes'] });
        assert.equal(services.body.meta.pagination.totalCount, expected[user.role], user.role);
      }
      for (const certUser of loaded.certUsers) {
        const login = await http.post('/edge/client/v1/authenticate?method=cert', undefined, { cert: certUser.certPem, key: certUser.keyPem });
        assert.equal(login.status, 200);
        assert.equal(login.body.data.identityId, certUser.identityId);
      }
    } finally {
      await controller.stop();
    }
  });

  test('another seed regenerates the directory', async () => {
    const other = await ensureSizedDataset('small', { dataDir, seed: 7, log: () => {} });
    assert.equal(other.reused, false);
    assert.equal(other.seed, 7);
    assert.notEqual(other.probes.worstIdentityId, loaded.probes.worstIdentityId);
    assert.equal(JSON.parse(readFileSync(join(dataDir, 'dataset.json'), 'utf8')).seed, 7);
  });
});
