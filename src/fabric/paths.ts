/**
 * Path selection over the router mesh: the cheapest path from the dialer's router to every router it can
 * reach over usable links. A path costs the sum of its links' costs plus the cost of every router it enters
 * (not the one it starts at). Routers that are not connected are not in the graph; a router with
 * `noTraversal` may start or end a path but never carry one through. Pure functions: the callers read the
 * graph from the store.
 */

export interface GraphRouter {
  id: string;
  cost: number;
  noTraversal: boolean;
}

export interface GraphLink {
  id: string;
  /** The two routers a link joins; it carries traffic both ways. */
  src: string;
  dst: string;
  cost: number;
}

export interface Path {
  /** Router ids, from the start to the end. */
  routers: string[];
  /** Link ids, `links[i]` joining `routers[i]` and `routers[i + 1]`. */
  links: string[];
  cost: number;
}

/** A tiny binary heap of [cost, router id]. */
class Queue {
  private items: Array<[number, string]> = [];

  get size(): number {
    return this.items.length;
  }

  push(item: [number, string]): void {
    const a = this.items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]![0] <= a[i]![0]) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }

  pop(): [number, string] {
    const a = this.items;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]![0] < a[m]![0]) m = l;
        if (r < a.length && a[r]![0] < a[m]![0]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

/** The cheapest path from `start` to every reachable router (the start itself: an empty path of cost 0). */
export function cheapestPaths(start: string, routers: ReadonlyMap<string, GraphRouter>, links: readonly GraphLink[]): Map<string, Path> {
  const out = new Map<string, Path>();
  if (!routers.has(start)) return out;
  const adjacent = new Map<string, Array<{ to: string; link: string; cost: number }>>();
  for (const link of links) {
    if (link.src === link.dst || !routers.has(link.src) || !routers.has(link.dst)) continue;
    const cost = Math.max(0, link.cost);
    for (const [a, b] of [[link.src, link.dst], [link.dst, link.src]] as const) {
      let list = adjacent.get(a);
      if (!list) adjacent.set(a, (list = []));
      list.push({ to: b, link: link.id, cost });
    }
  }
  const best = new Map<string, { cost: number; via?: { from: string; link: string } }>([[start, { cost: 0 }]]);
  const done = new Set<string>();
  const queue = new Queue();
  queue.push([0, start]);
  while (queue.size > 0) {
    const [cost, at] = queue.pop();
    if (done.has(at)) continue;
    done.add(at);
    // A router that may not be crossed ends every path that reaches it.
    if (at !== start && routers.get(at)!.noTraversal) continue;
    for (const edge of adjacent.get(at) ?? []) {
      if (done.has(edge.to)) continue;
      const next = cost + edge.cost + Math.max(0, routers.get(edge.to)!.cost);
      const known = best.get(edge.to);
      if (known && known.cost <= next) continue;
      best.set(edge.to, { cost: next, via: { from: at, link: edge.link } });
      queue.push([next, edge.to]);
    }
  }
  for (const [id, entry] of best) {
    const routerIds = [id];
    const linkIds: string[] = [];
    let step = entry;
    while (step.via) {
      linkIds.unshift(step.via.link);
      routerIds.unshift(step.via.from);
      step = best.get(step.via.from)!;
    }
    out.set(id, { routers: routerIds, links: linkIds, cost: entry.cost });
  }
  return out;
}
