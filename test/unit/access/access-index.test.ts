/**
 * The access index against the rules of upstream model §1.2 and §2: hand cases for each rule (ids OR-ed in
 * under AllOf, `#all`, the empty list, AnyOf/AllOf, entities created later, `@id` stripping on delete, a
 * service policy's type change), the identities each write reports as affected, and a seeded property
 * test comparing every answer of the index with a brute-force evaluation written independently here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AccessIndex, type EntityKind, type PolicyInput, type PolicyKind, type PolicyType, type RoleField } from '../../../src/access/access-index.ts';
import { mulberry32 } from '../../support/prng.ts';

function sorted(values: Iterable<string>): string[] {
  return [...values].sort();
}

function sp(id: string, identityRoles: string[], serviceRoles: string[], extra: Partial<PolicyInput> = {}): PolicyInput {
  return { id, kind: 'servicePolicy', semantic: 'AllOf', type: 'Dial', roles: { identityRoles, serviceRoles }, ...extra };
}

describe('AccessIndex: the matching rules', () => {
  it('ORs @ids in under AllOf and requires every #attribute otherwise', () => {
    const ix = new AccessIndex();
    ix.setEntity('identity', 'both', ['a', 'b']);
    ix.setEntity('identity', 'onlyA', ['a']);
    ix.setEntity('identity', 'byId', []);
    ix.setEntity('service', 's', []);
    ix.setPolicy(sp('p', ['#a', '#b', '@byId'], ['@s']));
    assert.deepEqual(sorted(ix.membersOf('p', 'identityRoles')), ['both', 'byId']);
    assert.deepEqual(sorted(ix.identitiesOfService('s')), ['both', 'byId']);
  });

  it('AnyOf needs at least one #attribute; ids still match', () => {
    const ix = new AccessIndex();
    ix.setEntity('identity', 'a', ['a']);
    ix.setEntity('identity', 'c', ['c']);
    ix.setEntity('identity', 'none', []);
    ix.setPolicy(sp('p', ['#a', '#b', '@none'], [], { semantic: 'AnyOf' }));
    assert.deepEqual(sorted(ix.membersOf('p', 'identityRoles')), ['a', 'none']);
  });

  it('#all matches every entity, including ones created later, under either semantic', () => {
    const ix = new AccessIndex();
    ix.setEntity('service', 's1', ['x']);
    ix.setPolicy(sp('p', ['#all'], ['#all'], { semantic: 'AnyOf' }));
    ix.setEntity('service', 's2', []);
    ix.setEntity('identity', 'i1', []);
    assert.deepEqual(sorted(ix.servicesOfIdentity('i1')), ['s1', 's2']);
  });

  it('an empty role list matches nothing', () => {
    const ix = new AccessIndex();
    ix.setEntity('identity', 'i', ['a']);
    ix.setEntity('service', 's', ['a']);
    ix.setPolicy(sp('p', [], ['#a']));
    assert.deepEqual(sorted(ix.membersOf('p', 'identityRoles')), []);
    assert.deepEqual(sorted(ix.servicesOfIdentity('i')), []);
    assert.deepEqual(ix.permissions('i', 's'), { dial: false, bind: false });
  });

  it('follows attribute changes of entities', () => {
    const ix = new AccessIndex();
    ix.setEntity('identity', 'i', []);
    ix.setEntity('service', 's', ['web']);
    ix.setPolicy(sp('p', ['#ops'], ['#web']));
    assert.equal(ix.permissions('i', 's').dial, false);
    ix.setEntity('identity', 'i', ['ops']);
    assert.equal(ix.permissions('i', 's').dial, true);
    ix.setEntity('service', 's', []);
    assert.equal(ix.permissions('i', 's').dial, false);
  });

  it('deleting an entity strips its @id: an entity later created with the same id does not match', () => {
    const ix = new AccessIndex();
    ix.setEntity('identity', 'i', []);
    ix.setEntity('service', 's', []);
    ix.setPolicy(sp('p', ['@i'], ['@s']));
    assert.deepEqual(ix.policiesOf('identity', 'i'), ['p']);
    ix.removeEntity('identity', 'i');
    assert.deepEqual(sorted(ix.identitiesOfService('s')), []);
    ix.setEntity('identity', 'i', []);
    assert.deepEqual(ix.policiesOf('identity', 'i'), []);
    assert.deepEqual(ix.permissions('i', 's'), { dial: false, bind: false });
  });

  it('a type change moves every link from Dial to Bind', () => {
    const ix = new AccessIndex();
    ix.setEntity('identity', 'i', []);
    ix.setEntity('service', 's', []);
    ix.setPolicy(sp('p', ['@i'], ['@s']));
    assert.deepEqual(ix.permissions('i', 's'), { dial: true, bind: false });
    const change = ix.setPolicy(sp('p', ['@i'], ['@s'], { type: 'Bind' }));
    assert.deepEqual(ix.permissions('i', 's'), { dial: false, bind: true });
    assert.deepEqual(sorted(ix.servicesOfIdentity('i', 'Dial')), []);
    assert.deepEqual(sorted(ix.servicesOfIdentity('i', 'Bind')), ['s']);
    assert.deepEqual(ix.policyType('p'), 'Bind');
    assert.deepEqual(sorted(change.affectedIdentities), ['i']);
  });

  it('edge routers for an identity and a service need both an ERP and a SERP', () => {
    const ix = new AccessIndex();
    ix.setEntity('identity', 'i', []);
    ix.setEntity('service', 's', []);
    for (const r of ['r1', 'r2', 'r3']) ix.setEntity('edgeRouter', r, []);
    ix.setPolicy({ id: 'erp', kind: 'edgeRouterPolicy', semantic: 'AllOf', roles: { identityRoles: ['@i'], edgeRouterRoles: ['@r1', '@r2'] } });
    ix.setPolicy({ id: 'serp', kind: 'serviceEdgeRouterPolicy', semantic: 'AllOf', roles: { serviceRoles: ['@s'], edgeRouterRoles: ['@r2', '@r3'] } });
    assert.deepEqual(sorted(ix.edgeRoutersFor('i', 's')), ['r2']);
    assert.deepEqual(sorted(ix.identitiesOfEdgeRouter('r1')), ['i']);
    assert.deepEqual(sorted(ix.servicesOfEdgeRouter('r3')), ['s']);
  });
});

describe('AccessIndex: affected identities', () => {
  it('reports the identities whose services can change, and no one for edge router policies', () => {
    const ix = new AccessIndex();
    for (const i of ['i1', 'i2', 'i3']) ix.setEntity('identity', i, i === 'i3' ? [] : ['team']);
    ix.setEntity('service', 's', ['web']);
    ix.setEntity('postureCheck', 'pc', []);
    assert.deepEqual(sorted(ix.setPolicy(sp('p', ['#team'], ['#web'])).affectedIdentities), ['i1', 'i2']);
    // An identity joining: only itself.
    assert.deepEqual(sorted(ix.setEntity('identity', 'i3', ['team']).affectedIdentities), ['i3']);
    // A service joining or leaving: every identity of the policy.
    ix.setEntity('service', 's2', []);
    assert.deepEqual(sorted(ix.setEntity('service', 's2', ['web']).affectedIdentities), ['i1', 'i2', 'i3']);
    // Identity roles changed with the same targets: only those who joined or left.
    assert.deepEqual(sorted(ix.setPolicy(sp('p', ['@i1'], ['#web'])).affectedIdentities), ['i2', 'i3']);
    // Posture checks changed: every identity of the policy.
    assert.deepEqual(sorted(ix.setPolicy(sp('p', ['@i1'], ['#web'], { roles: { identityRoles: ['@i1'], serviceRoles: ['#web'], postureCheckRoles: ['@pc'] } })).affectedIdentities), ['i1']);
    assert.deepEqual(sorted(ix.setEntity('postureCheck', 'pc', ['x']).affectedIdentities), []);
    // A policy without services affects no one; removing a policy affects its identities.
    assert.deepEqual(sorted(ix.setPolicy(sp('empty', ['#team'], [])).affectedIdentities), []);
    assert.deepEqual(sorted(ix.removePolicy('p').affectedIdentities), ['i1']);
    assert.deepEqual(
      sorted(ix.setPolicy({ id: 'erp', kind: 'edgeRouterPolicy', semantic: 'AllOf', roles: { identityRoles: ['#all'], edgeRouterRoles: ['#all'] } }).affectedIdentities),
      [],
    );
    assert.deepEqual(sorted(ix.removePolicy('unknown').affectedIdentities), []);
  });
});

// ---- brute-force model -----------------------------------------------------------------------------

const KINDS: EntityKind[] = ['identity', 'service', 'edgeRouter', 'postureCheck'];
const FIELD_KIND: Record<RoleField, EntityKind> = {
  identityRoles: 'identity',
  serviceRoles: 'service',
  edgeRouterRoles: 'edgeRouter',
  postureCheckRoles: 'postureCheck',
};
const FIELDS: Record<PolicyKind, RoleField[]> = {
  servicePolicy: ['identityRoles', 'serviceRoles', 'postureCheckRoles'],
  edgeRouterPolicy: ['identityRoles', 'edgeRouterRoles'],
  serviceEdgeRouterPolicy: ['serviceRoles', 'edgeRouterRoles'],
};
const ATTRIBUTES = ['a', 'b', 'c', 'd', 'e'];

interface ModelPolicy {
  id: string;
  kind: PolicyKind;
  semantic: 'AllOf' | 'AnyOf';
  type: PolicyType;
  roles: Record<string, string[]>;
}

class Model {
  entities: Record<EntityKind, Map<string, Set<string>>> = { identity: new Map(), service: new Map(), edgeRouter: new Map(), postureCheck: new Map() };
  policies = new Map<string, ModelPolicy>();

  matches(p: ModelPolicy, field: RoleField, id: string): boolean {
    const roles = p.roles[field] ?? [];
    if (roles.includes('#all')) return true;
    if (roles.includes(`@${id}`)) return true;
    const wanted = roles.filter((r) => r.startsWith('#')).map((r) => r.slice(1));
    if (wanted.length === 0) return false;
    const has = this.entities[FIELD_KIND[field]].get(id)!;
    return p.semantic === 'AllOf' ? wanted.every((a) => has.has(a)) : wanted.some((a) => has.has(a));
  }

  members(p: ModelPolicy, field: RoleField): string[] {
    return sorted([...this.entities[FIELD_KIND[field]].keys()].filter((id) => this.matches(p, field, id)));
  }

  policiesOf(kind: EntityKind, id: string, policyKind?: PolicyKind): string[] {
    const out: string[] = [];
    for (const p of this.policies.values()) {
      if (policyKind && p.kind !== policyKind) continue;
      if (FIELDS[p.kind].some((f) => FIELD_KIND[f] === kind && this.matches(p, f, id))) out.push(p.id);
    }
    return sorted(out);
  }

  /** Entities of `toField` sharing a policy of `policyKind` (and type) with entity `fromId` in `fromField`. */
  reach(policyKind: PolicyKind, fromField: RoleField, fromId: string, toField: RoleField, type?: PolicyType): string[] {
    const out = new Set<string>();
    for (const p of this.policies.values()) {
      if (p.kind !== policyKind || (type && p.type !== type)) continue;
      if (!this.matches(p, fromField, fromId)) continue;
      for (const id of this.members(p, toField)) out.add(id);
    }
    return sorted(out);
  }

  /** What an identity sees: `<service>:<type>` pairs and the posture checks of each linking policy. */
  view(identity: string): string {
    const parts: string[] = [];
    for (const p of this.policies.values()) {
      if (p.kind !== 'servicePolicy' || !this.matches(p, 'identityRoles', identity)) continue;
      const checks = this.members(p, 'postureCheckRoles').join(',');
      for (const s of this.members(p, 'serviceRoles')) parts.push(`${s}:${p.type}:${p.id}:${checks}`);
    }
    return parts.sort().join('|');
  }
}

function compare(ix: AccessIndex, m: Model, context: string): void {
  const ids = (k: EntityKind) => [...m.entities[k].keys()];
  for (const i of ids('identity')) {
    assert.deepEqual(sorted(ix.servicesOfIdentity(i)), m.reach('servicePolicy', 'identityRoles', i, 'serviceRoles'), `${context} servicesOfIdentity ${i}`);
    for (const t of ['Dial', 'Bind'] as const) {
      assert.deepEqual(sorted(ix.servicesOfIdentity(i, t)), m.reach('servicePolicy', 'identityRoles', i, 'serviceRoles', t), `${context} servicesOfIdentity ${i} ${t}`);
    }
    const routers = m.reach('edgeRouterPolicy', 'identityRoles', i, 'edgeRouterRoles');
    assert.deepEqual(sorted(ix.edgeRoutersOfIdentity(i)), routers, `${context} edgeRoutersOfIdentity ${i}`);
    assert.deepEqual(sorted(ix.edgeRouterSet('identity', i)), routers, `${context} edgeRouterSet identity ${i}`);
    for (const s of ids('service')) {
      const serviceRouters = new Set(m.reach('serviceEdgeRouterPolicy', 'serviceRoles', s, 'edgeRouterRoles'));
      assert.deepEqual(sorted(ix.edgeRoutersFor(i, s)), routers.filter((r) => serviceRouters.has(r)), `${context} edgeRoutersFor ${i} ${s}`);
      const expected = {
        dial: m.reach('servicePolicy', 'identityRoles', i, 'serviceRoles', 'Dial').includes(s),
        bind: m.reach('servicePolicy', 'identityRoles', i, 'serviceRoles', 'Bind').includes(s),
      };
      assert.deepEqual(ix.permissions(i, s), expected, `${context} permissions ${i} ${s}`);
      // The per-identity answer (kept between index changes) agrees with the model too.
      assert.deepEqual(ix.identityServices(i).permissions(s), expected, `${context} identityServices.permissions ${i} ${s}`);
      const linking = [...m.policies.values()]
        .filter((p) => p.kind === 'servicePolicy' && m.matches(p, 'identityRoles', i) && m.members(p, 'serviceRoles').includes(s))
        .map((p) => p.id);
      assert.deepEqual(sorted(ix.identityServices(i).linking(s)), sorted(linking), `${context} identityServices.linking ${i} ${s}`);
    }
    const seen: string[] = [];
    ix.identityServices(i).forEachService((s) => seen.push(s));
    assert.deepEqual(sorted(seen), m.reach('servicePolicy', 'identityRoles', i, 'serviceRoles'), `${context} identityServices.forEachService ${i}`);
  }
  for (const s of ids('service')) {
    assert.deepEqual(sorted(ix.identitiesOfService(s)), m.reach('servicePolicy', 'serviceRoles', s, 'identityRoles'), `${context} identitiesOfService ${s}`);
    for (const t of ['Dial', 'Bind'] as const) {
      assert.deepEqual(sorted(ix.identitiesOfService(s, t)), m.reach('servicePolicy', 'serviceRoles', s, 'identityRoles', t), `${context} identitiesOfService ${s} ${t}`);
    }
    assert.deepEqual(sorted(ix.edgeRoutersOfService(s)), m.reach('serviceEdgeRouterPolicy', 'serviceRoles', s, 'edgeRouterRoles'), `${context} edgeRoutersOfService ${s}`);
    assert.deepEqual(sorted(ix.edgeRouterSet('service', s)), m.reach('serviceEdgeRouterPolicy', 'serviceRoles', s, 'edgeRouterRoles'), `${context} edgeRouterSet service ${s}`);
    assert.deepEqual(sorted(ix.postureChecksOfService(s)), m.reach('servicePolicy', 'serviceRoles', s, 'postureCheckRoles'), `${context} postureChecksOfService ${s}`);
  }
  for (const r of ids('edgeRouter')) {
    assert.deepEqual(sorted(ix.identitiesOfEdgeRouter(r)), m.reach('edgeRouterPolicy', 'edgeRouterRoles', r, 'identityRoles'), `${context} identitiesOfEdgeRouter ${r}`);
    assert.deepEqual(sorted(ix.servicesOfEdgeRouter(r)), m.reach('serviceEdgeRouterPolicy', 'edgeRouterRoles', r, 'serviceRoles'), `${context} servicesOfEdgeRouter ${r}`);
  }
  for (const k of KINDS) {
    assert.equal(ix.entityCount(k), m.entities[k].size, `${context} entityCount ${k}`);
    for (const id of ids(k)) {
      assert.deepEqual(sorted(ix.policiesOf(k, id)), m.policiesOf(k, id), `${context} policiesOf ${k} ${id}`);
      for (const pk of Object.keys(FIELDS) as PolicyKind[]) {
        assert.deepEqual(sorted(ix.policiesOf(k, id, pk)), m.policiesOf(k, id, pk), `${context} policiesOf ${k} ${id} ${pk}`);
      }
    }
  }
  for (const p of m.policies.values()) {
    for (const f of FIELDS[p.kind]) assert.deepEqual(sorted(ix.membersOf(p.id, f)), m.members(p, f), `${context} membersOf ${p.id} ${f}`);
    if (p.kind === 'servicePolicy') assert.equal(ix.policyType(p.id), p.type);
  }
}

describe('AccessIndex: seeded property test against brute force', () => {
  it('agrees with the brute-force rules on 50 random networks under random edits and deletes', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const rnd = mulberry32(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
      const chance = (p: number) => rnd() < p;
      const ix = new AccessIndex();
      const m = new Model();
      let next = 0;

      const randomAttributes = () => ATTRIBUTES.filter(() => chance(0.35));
      const randomRoles = (field: RoleField): string[] => {
        if (chance(0.1)) return ['#all'];
        const out = new Set<string>();
        const existing = [...m.entities[FIELD_KIND[field]].keys()];
        const n = Math.floor(rnd() * 4);
        for (let k = 0; k < n; k++) {
          if (existing.length > 0 && chance(0.35)) out.add(`@${pick(existing)}`);
          else out.add(`#${pick(ATTRIBUTES)}`);
        }
        return sorted(out);
      };
      const randomPolicy = (id: string, kind: PolicyKind): ModelPolicy => {
        const roles: Record<string, string[]> = {};
        for (const f of FIELDS[kind]) roles[f] = randomRoles(f);
        return { id, kind, semantic: chance(0.5) ? 'AllOf' : 'AnyOf', type: chance(0.5) ? 'Dial' : 'Bind', roles };
      };
      const toInput = (p: ModelPolicy): PolicyInput => ({ id: p.id, kind: p.kind, semantic: p.semantic, type: p.kind === 'servicePolicy' ? p.type : undefined, roles: p.roles });

      /** Runs one write on both sides; every identity whose view changed must be reported as affected. */
      const apply = (label: string, write: () => ReturnType<AccessIndex['setEntity']>, model: () => void) => {
        const identities = [...m.entities.identity.keys()];
        const before = new Map(identities.map((i) => [i, m.view(i)]));
        model();
        const change = write();
        for (const i of m.entities.identity.keys()) {
          if (before.has(i) && before.get(i) !== m.view(i)) assert.ok(change.affectedIdentities.has(i), `seed ${seed} ${label}: ${i} changed but was not reported`);
        }
      };

      for (let i = 0; i < 12; i++) {
        const kind = pick(KINDS);
        const id = `${kind}-${next++}`;
        const attrs = randomAttributes();
        m.entities[kind].set(id, new Set(attrs));
        ix.setEntity(kind, id, attrs);
      }
      for (let i = 0; i < 8; i++) {
        const p = randomPolicy(`p-${next++}`, pick(Object.keys(FIELDS) as PolicyKind[]));
        apply('create policy', () => ix.setPolicy(toInput(p)), () => m.policies.set(p.id, p));
      }
      compare(ix, m, `seed ${seed} initial`);

      for (let step = 0; step < 40; step++) {
        const op = Math.floor(rnd() * 7);
        const kind = pick(KINDS);
        const existing = [...m.entities[kind].keys()];
        const policies = [...m.policies.values()];
        if (op === 0 || (op <= 2 && existing.length === 0)) {
          const id = `${kind}-${next++}`;
          const attrs = randomAttributes();
          apply('create entity', () => ix.setEntity(kind, id, attrs), () => m.entities[kind].set(id, new Set(attrs)));
        } else if (op === 1) {
          const id = pick(existing);
          const attrs = randomAttributes();
          apply('change attributes', () => ix.setEntity(kind, id, attrs), () => m.entities[kind].set(id, new Set(attrs)));
        } else if (op === 2) {
          const id = pick(existing);
          apply(
            'delete entity',
            () => ix.removeEntity(kind, id),
            () => {
              m.entities[kind].delete(id);
              for (const p of m.policies.values()) {
                for (const f of FIELDS[p.kind]) if (FIELD_KIND[f] === kind) p.roles[f] = p.roles[f]!.filter((r) => r !== `@${id}`);
              }
            },
          );
        } else if (op === 3 || (op >= 4 && policies.length === 0)) {
          const p = randomPolicy(`p-${next++}`, pick(Object.keys(FIELDS) as PolicyKind[]));
          apply('create policy', () => ix.setPolicy(toInput(p)), () => m.policies.set(p.id, p));
        } else if (op === 4 || op === 5) {
          const old = pick(policies);
          const p = randomPolicy(old.id, old.kind);
          if (op === 5) Object.assign(p, { roles: old.roles, semantic: old.semantic });
          apply('update policy', () => ix.setPolicy(toInput(p)), () => m.policies.set(p.id, p));
        } else {
          const p = pick(policies);
          apply('delete policy', () => ix.removePolicy(p.id), () => m.policies.delete(p.id));
        }
        compare(ix, m, `seed ${seed} step ${step}`);
      }
    }
  });
});
