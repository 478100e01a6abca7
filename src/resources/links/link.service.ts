/**
 * Links as the fabric API reads them: pages of `links` (filter, sort and paging by the link symbols) and
 * single links, each with references to its two routers. The link layer writes the table; an operator's
 * patch changes a link's static cost (its cost follows: static cost plus both latencies in whole
 * milliseconds) and whether it is down, which path selection reads at the next circuit; a link taken down
 * stays down when its routers report it again, until it is lifted.
 */
import type { Store } from '../../store/store.ts';
import { compileListQuery, type ListParams } from '../../query/index.ts';
import { filterableFields } from '../../query/symbols.ts';
import { assertFound } from '../../errors.ts';
import { fabricRef } from '../fabric-ref.ts';
import type { ListResult } from '../entity-service.ts';
import { linkSymbols } from './link.resource.ts';

/** Each link with its routers' names (a router removed meanwhile has none). */
const LINKS_WITH_NAMES = `(SELECT l.*, s.name AS src_router_name, d.name AS dst_router_name FROM links l
  LEFT JOIN routers s ON s.id = l.src_router_id LEFT JOIN routers d ON d.id = l.dst_router_id)`;

interface LinkRow {
  id: string;
  src_router_id: string;
  dst_router_id: string;
  src_router_name: string | null;
  dst_router_name: string | null;
  protocol: string;
  cost: number;
  static_cost: number;
  src_latency: number;
  dst_latency: number;
  state: string;
  down: number;
  iteration: number;
}

export function createLinkService(store: Store) {
  async function list(req: ListParams): Promise<ListResult> {
    const q = compileListQuery(linkSymbols, req, store.dialect);
    const { rows, totalCount } = await store.page(LINKS_WITH_NAMES, q);
    return {
      items: rows,
      page: { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited },
      filterableFields: filterableFields(linkSymbols),
    };
  }

  async function get(id: string): Promise<Record<string, unknown>> {
    const row = await store.get(`SELECT e.* FROM ${LINKS_WITH_NAMES} e WHERE e.id = ?`, [id]);
    return assertFound(row, 'link', id);
  }

  /** The fabric linkDetail of a row read by `list` or `get`. */
  function present(row: Record<string, unknown>): Record<string, unknown> {
    const l = row as unknown as LinkRow;
    return {
      connections: null,
      cost: l.cost,
      destLatency: l.dst_latency,
      destRouter: fabricRef('routers', l.dst_router_id, l.dst_router_name),
      down: l.down === 1,
      id: l.id,
      iteration: l.iteration,
      protocol: l.protocol,
      sourceLatency: l.src_latency,
      sourceRouter: fabricRef('routers', l.src_router_id, l.src_router_name),
      state: l.state,
      staticCost: l.static_cost,
    };
  }

  /**
   * Sets the supplied fields of a link (NOT_FOUND when it is gone). Taking it down holds it down: the hold
   * outlives the link's row, so the link stays down when its routers report it again, until `down: false`
   * lifts the hold (`link_holds`, migration 0033, whose triggers keep `links.down`).
   */
  async function patch(id: string, body: { down?: boolean | null; staticCost?: number | null }): Promise<void> {
    await store.write(async (tx) => {
      const row = await tx.get<{ static_cost: number; src_router_id: string; dst_router_id: string }>(
        'SELECT static_cost, src_router_id, dst_router_id FROM links WHERE id = ?',
        [id],
      );
      assertFound(row, 'link', id);
      const at = new Date().toISOString();
      if (body.down === true) {
        await tx.run('INSERT INTO link_holds (link_id, src_router_id, dst_router_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (link_id) DO NOTHING', [id, row!.src_router_id, row!.dst_router_id, at]);
      } else if (body.down === false) {
        await tx.run('DELETE FROM link_holds WHERE link_id = ?', [id]);
      }
      // The cost follows in the store (migration 0031).
      await tx.run('UPDATE links SET static_cost = ?, updated_at = ? WHERE id = ?', [body.staticCost ?? row!.static_cost, at, id]);
    });
  }

  return { list, get, present, patch };
}

export type LinkService = ReturnType<typeof createLinkService>;
