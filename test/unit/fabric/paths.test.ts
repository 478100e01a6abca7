/**
 * Path selection: cheapest paths by link and router costs, both link directions, routers that may not be
 * crossed, unreachable and unknown routers, parallel links.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cheapestPaths, type GraphLink, type GraphRouter } from '../../../src/fabric/paths.ts';

function routers(...specs: Array<[string, number?, boolean?]>): Map<string, GraphRouter> {
  return new Map(specs.map(([id, cost = 0, noTraversal = false]) => [id, { id, cost, noTraversal }]));
}

function link(id: string, src: string, dst: string, cost = 1): GraphLink {
  return { id, src, dst, cost };
}

describe('cheapestPaths', () => {
  it('gives the start an empty path and follows a line of links in either direction', () => {
    const paths = cheapestPaths('a', routers(['a'], ['b'], ['c']), [link('ab', 'a', 'b'), link('cb', 'c', 'b')]);
    assert.deepEqual(paths.get('a'), { routers: ['a'], links: [], cost: 0 });
    assert.deepEqual(paths.get('b'), { routers: ['a', 'b'], links: ['ab'], cost: 1 });
    assert.deepEqual(paths.get('c'), { routers: ['a', 'b', 'c'], links: ['ab', 'cb'], cost: 2 });
  });

  it('adds the cost of every router entered and picks the cheaper route', () => {
    const graph = routers(['a', 100], ['b', 10], ['c', 0], ['d']);
    const links = [link('ab', 'a', 'b'), link('bd', 'b', 'd'), link('ac', 'a', 'c', 3), link('cd', 'c', 'd', 3)];
    assert.deepEqual(cheapestPaths('a', graph, links).get('d'), { routers: ['a', 'c', 'd'], links: ['ac', 'cd'], cost: 6 });
    const cheaperB = routers(['a'], ['b', 1], ['c'], ['d']);
    assert.deepEqual(cheapestPaths('a', cheaperB, links).get('d')?.links, ['ab', 'bd']);
  });

  it('never crosses a router with noTraversal, but reaches it and starts from it', () => {
    const graph = routers(['a'], ['b', 0, true], ['c'], ['d']);
    const links = [link('ab', 'a', 'b'), link('bc', 'b', 'c'), link('ad', 'a', 'd', 5), link('dc', 'd', 'c', 5)];
    const paths = cheapestPaths('a', graph, links);
    assert.deepEqual(paths.get('b')?.routers, ['a', 'b']);
    assert.deepEqual(paths.get('c')?.routers, ['a', 'd', 'c'], 'the costlier way around');
    assert.deepEqual(cheapestPaths('b', graph, links).get('c')?.routers, ['b', 'c']);
    const cut = cheapestPaths('a', graph, [link('ab', 'a', 'b'), link('bc', 'b', 'c')]);
    assert.equal(cut.has('c'), false);
  });

  it('ignores links to routers that are not connected and takes the cheapest of parallel links', () => {
    const graph = routers(['a'], ['b']);
    const paths = cheapestPaths('a', graph, [link('ax', 'a', 'x'), link('ab1', 'a', 'b', 7), link('ab2', 'b', 'a', 2)]);
    assert.equal(paths.has('x'), false);
    assert.deepEqual(paths.get('b'), { routers: ['a', 'b'], links: ['ab2'], cost: 2 });
    assert.equal(cheapestPaths('z', graph, []).size, 0, 'an unknown start reaches nothing');
  });
});
