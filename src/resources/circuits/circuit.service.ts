/**
 * Circuits as the fabric API reads them: pages of `circuits` (filter, sort and paging by the circuit symbols)
 * and single circuits, with references to their service, terminator, routers and links. The router plane
 * writes the table; nothing here changes it. The tags are the ones the routers got with the circuit's routes
 * (service, dialing identity, host), as upstream keeps them.
 */
import type { Db } from '../../store/database.ts';
import { prepare, selectPage } from '../../store/entity-table.ts';
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

export function createCircuitService(db: Db) {
  function routerName(id: string): string | undefined {
    return (prepare(db, 'SELECT name FROM routers WHERE id = ?').get(id) as { name: string } | undefined)?.name;
  }

  function list(req: ListParams): ListResult {
    const q = compileListQuery(circuitSymbols, req);
    const { rows, totalCount } = selectPage(db, CIRCUITS_WITH_REFS, q);
    return {
      items: rows,
      page: { limit: q.limit, offset: q.offset, totalCount, unlimited: q.unlimited },
      filterableFields: filterableFields(circuitSymbols),
    };
  }

  function get(id: string): Record<string, unknown> {
    const row = prepare(db, `SELECT e.* FROM ${CIRCUITS_WITH_REFS} e WHERE e.id = ?`).get(id) as Record<string, unknown> | undefined;
    return assertFound(row, 'circuit', id);
  }

  /** The fabric circuitDetail of a row read by `list` or `get`. */
  function present(row: Record<string, unknown>): Record<string, unknown> {
    const c = row as unknown as CircuitRow;
    const nodes = idList(c.path).map((routerId) => fabricRef('routers', routerId, routerName(routerId)));
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
