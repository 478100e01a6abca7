/**
 * Circuits as the fabric API reads them: pages of `circuits` (filter, sort and paging by the circuit symbols)
 * and single circuits, with references to their service, terminator, routers and links. The router plane
 * writes the table; nothing here changes it. The tags are the ones the routers got with the circuit's routes
 * (service, dialing identity, host), as upstream keeps them.
 */
import type { Store } from '../../store/store.ts';
import { compileListQuery, type ListParams } from '../../query/index.ts';
import { filterableFields } from '../../query/symbols.ts';
import { assertFound } from '../../errors.ts';
import { fabricLinks, fabricRef } from '../fabric-ref.ts';
import type { ListResult } from '../entity-service.ts';
import { circuitSymbols } from './circuit.resource.ts';

/** Each circuit with its service's name and its terminator's host (either may be gone by now). */
const CIRCUITS_WITH_REFS = `(SELECT c.*, s.name AS service_name, t.host_id AS terminator_host_id FROM circuits c
  LEFT JOIN services s ON s.id = c.service_id LEFT JOIN terminators t ON t.id = c.terminator_id)`;

interface CircuitRow {
  id: string;
  session_id: string;
  identity_id: string;
  service_id: string;
  service_name: string | null;
  terminator_id: string;
  terminator_host_id: string | null;
  /** Router ids, dialer's first (JSON). */
  path: string;
  /** Link ids between them, in path order (JSON); absent from rows written before links existed. */
  links?: string | null;
  created_at: string;
}

function idList(json: string | null | undefined): string[] {
  if (!json) return [];
  const value = JSON.parse(json) as unknown;
  return Array.isArray(value) ? value.map(String) : [];
}

export function createCircuitService(store: Store) {
  async function routerName(id: string): Promise<string | undefined> {
    return store.value<string>('SELECT name FROM routers WHERE id = ?', [id]);
  }

  async function list(req: ListParams): Promise<ListResult> {
    const q = compileListQuery(circuitSymbols, req, store.dialect);
    const { rows, totalCount } = await store.page(CIRCUITS_WITH_REFS, q);
    return {
      items: rows,
      page: { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited },
      filterableFields: filterableFields(circuitSymbols),
    };
  }

  async function get(id: string): Promise<Record<string, unknown>> {
    const row = await store.get(`SELECT e.* FROM ${CIRCUITS_WITH_REFS} e WHERE e.id = ?`, [id]);
    return assertFound(row, 'circuit', id);
  }

  /** The fabric circuitDetail of a row read by `list` or `get`. */
  async function present(row: Record<string, unknown>): Promise<Record<string, unknown>> {
    const c = row as unknown as CircuitRow;
    const nodes: Array<ReturnType<typeof fabricRef>> = [];
    for (const routerId of idList(c.path)) nodes.push(fabricRef('routers', routerId, await routerName(routerId)));
    const links = idList(c.links).map((linkId) => fabricRef('links', linkId, linkId));
    return {
      _links: fabricLinks('circuits', c.id),
      createdAt: c.created_at,
      id: c.id,
      tags: { clientId: c.identity_id, hostId: c.terminator_host_id ?? '', serviceId: c.service_id },
      updatedAt: c.created_at,
      ...(c.session_id ? { clientId: c.session_id } : {}),
      path: { links: links.length > 0 ? links : null, nodes: nodes.length > 0 ? nodes : null },
      service: fabricRef('services', c.service_id, c.service_name ?? '<deleted>'),
      terminator: fabricRef('terminators', c.terminator_id, c.terminator_id),
    };
  }

  return { list, get, present };
}

export type CircuitService = ReturnType<typeof createCircuitService>;
