/**
 * Terminator rules beyond generic CRUD (upstream model §5): the service and router must exist (404); an
 * empty binding becomes `udp` for `udp:` addresses and `transport` otherwise; the service is fixed at create.
 * The range of cost and precedence and what REST may do to a terminator a router created (update refused,
 * delete allowed) are the rules every terminator write follows, in src/fabric/terminators.ts.
 * The same records are read by three APIs, each with its own read model (management, client and fabric).
 */
import { entityRef } from '../entity-ref.ts';
import { fabricLinks, fabricRef } from '../fabric-ref.ts';
import type { Values } from '../../store/entity-table.ts';
import type { Store, Tx } from '../../store/store.ts';
import { notFound } from '../../errors.ts';
import { createEntityService, systemClock, type Clock, type ListRequest } from '../entity-service.ts';
import { checkRestCreate, checkRestUpdate } from '../../fabric/terminators.ts';
import { terminatorResource } from './terminator.resource.ts';

function defaultBinding(address: unknown): string {
  return typeof address === 'string' && address.startsWith('udp:') ? 'udp' : 'transport';
}

async function assertExists(tx: Tx, table: string, singular: string, id: unknown): Promise<void> {
  if (!(await tx.get(`SELECT 1 FROM ${table} WHERE id = ?`, [id]))) throw notFound(singular, String(id));
}

export function createTerminatorService(store: Store, controllerId: string, clock: Clock = systemClock) {
  const entities = createEntityService(
    terminatorResource,
    store,
    {
      async beforeCreate(tx, values) {
        await assertExists(tx, 'services', 'service', values.service);
        await assertExists(tx, 'routers', 'router', values.router);
        if (!values.binding) values.binding = defaultBinding(values.address);
        checkRestCreate(values);
        values.sourceCtrl = controllerId;
      },
      async beforeUpdate(tx, existing, changes) {
        checkRestUpdate(existing, changes);
        delete changes.service;
        if (changes.router !== undefined) await assertExists(tx, 'routers', 'router', changes.router);
        if (changes.binding !== undefined && !changes.binding) defaultBindingFor(changes, existing);
      },
    },
    clock,
  );

  function defaultBindingFor(changes: Values, existing: Values): void {
    changes.binding = defaultBinding(changes.address ?? existing.address);
  }

  async function nameOf(table: string, id: string): Promise<string> {
    const row = await store.get<{ name: string }>(`SELECT name FROM ${table} WHERE id = ?`, [id]);
    return row?.name ?? '';
  }

  /** The management read model (terminatorDetail). */
  async function present(values: Values): Promise<Record<string, unknown>> {
    const detail = terminatorResource.presentStored(values);
    const serviceId = values.service as string;
    const routerId = values.router as string;
    detail.serviceId = serviceId;
    detail.service = entityRef('services', serviceId, await nameOf('services', serviceId));
    detail.routerId = routerId;
    detail.router = entityRef('transit-routers', routerId, await nameOf('routers', routerId));
    detail.identity = values.identity ?? '';
    detail.precedence = values.precedence;
    detail.dynamicCost = 0;
    return detail;
  }

  /** The client read model (terminatorClientDetail). */
  async function presentForClient(values: Values): Promise<Record<string, unknown>> {
    const serviceId = values.service as string;
    return {
      _links: terminatorResource.links(values.id as string),
      createdAt: values.createdAt,
      id: values.id,
      tags: values.tags ?? {},
      updatedAt: values.updatedAt,
      identity: values.identity ?? '',
      routerId: values.router,
      service: entityRef('services', serviceId, await nameOf('services', serviceId)),
      serviceId,
    };
  }

  /** The fabric API's read model (fabric terminatorDetail). */
  async function presentForFabric(values: Values): Promise<Record<string, unknown>> {
    const id = values.id as string;
    const serviceId = values.service as string;
    const routerId = values.router as string;
    const routerName = await nameOf('routers', routerId);
    const serviceName = await nameOf('services', serviceId);
    return {
      _links: fabricLinks('terminators', id),
      createdAt: values.createdAt,
      id,
      tags: values.tags ?? {},
      updatedAt: values.updatedAt,
      address: values.address,
      binding: values.binding,
      cost: values.cost ?? 0,
      dynamicCost: 0,
      hostId: values.hostId ?? '',
      instanceId: values.identity ?? '',
      precedence: values.precedence,
      router: fabricRef('routers', routerId, routerName),
      routerId,
      service: fabricRef('services', serviceId, serviceName),
      serviceId,
    };
  }

  /** A page of one service's terminators. */
  function listForService(serviceId: string, req: ListRequest) {
    return entities.list(req, { sql: 'e.service_id = ?', params: [serviceId] });
  }

  /** A page of one router's terminators. */
  function listForRouter(routerId: string, req: ListRequest) {
    return entities.list(req, { sql: 'e.router_id = ?', params: [routerId] });
  }

  return { ...entities, present, presentForClient, presentForFabric, listForService, listForRouter };
}

export type TerminatorService = ReturnType<typeof createTerminatorService>;
