/**
 * Identity lifecycle operations beyond CRUD (upstream auth §7, model §3.2 and §8.4; seeds management §3):
 * disable for a number of minutes (0 = until enabled), which also ends every API session of the identity;
 * enable, which clears the disabled state; and data-flow tracing.
 */
import { Type } from '@sinclair/typebox';
import type { RouteSpec } from '../../http/route.ts';
import { IdParams } from '../../http/list-params.ts';
import { detailEnvelope, empty, emptyEnvelope, okNullMeta } from '../../http/envelope.ts';
import type { Store } from '../../store/store.ts';
import { notFound } from '../../errors.ts';
import { systemClock, type Clock } from '../entity-service.ts';
import type { ApiSessionService } from '../../auth/api-session.service.ts';
import type { IdentityTraces, TraceSpec } from './identity-trace.ts';
import { onIdentity } from './identity-rights.ts';

const DisableParams = Type.Object({ durationMinutes: Type.Integer() });

const TraceSpecBody = Type.Object({
  channels: Type.Optional(Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } })),
  duration: Type.Optional(Type.String()),
  enabled: Type.Optional(Type.Boolean()),
  traceId: Type.Optional(Type.String()),
});

const TraceDetail = Type.Object({
  enabled: Type.Optional(Type.Boolean()),
  traceId: Type.Optional(Type.String()),
  // Optional only so the serializer keeps upstream's member order; it is always sent.
  until: Type.Optional(Type.String({ format: 'date-time' })),
});

export interface IdentityLifecycleDeps {
  store: Store;
  apiSessions: Pick<ApiSessionService, 'removeForIdentity'>;
  traces: IdentityTraces;
  clock?: Clock;
}

export function identityLifecycleRoutes(deps: IdentityLifecycleDeps): RouteSpec[] {
  const { store, apiSessions, traces } = deps;
  const clock = deps.clock ?? systemClock;
  const tag = 'Identity';
  const idOf = (params: unknown) => (params as { id: string }).id;

  /** Sets (or clears) the disabled times in one transaction with the end of the identity's API sessions. */
  async function setDisabled(id: string, disabledAt: string | null, disabledUntil: string | null, endSessions: boolean): Promise<void> {
    await store.write(async (tx) => {
      const changed = await tx.run('UPDATE identities SET disabled_at = ?, disabled_until = ?, updated_at = ? WHERE id = ?', [
        disabledAt,
        disabledUntil,
        clock.now().toISOString(),
        id,
      ]);
      if (changed.changes === 0) throw notFound('identity', id);
      if (endSessions) await apiSessions.removeForIdentity(tx, id);
    });
  }

  return [
    {
      method: 'POST', url: '/identities/:id/disable', operationId: 'disableIdentity', tag,
      summary: 'Disable an identity for a number of minutes (0: until enabled) and end its API sessions', access: 'identity.update', actsOn: onIdentity(deps.store, 'disable'), params: IdParams, body: DisableParams, response: { 200: emptyEnvelope },
      handler: async (req) => {
        const minutes = Math.max(0, (req.body as { durationMinutes: number }).durationMinutes);
        const now = clock.now();
        const until = minutes === 0 ? null : new Date(now.getTime() + minutes * 60_000).toISOString();
        await setDisabled(idOf(req.params), now.toISOString(), until, true);
        return empty();
      },
    },
    {
      method: 'POST', url: '/identities/:id/enable', operationId: 'enableIdentity', tag,
      summary: 'Clear the disabled state of an identity', access: 'identity.update', actsOn: onIdentity(deps.store, 'enable'),
      params: IdParams, response: { 200: emptyEnvelope },
      handler: async (req) => {
        await setDisabled(idOf(req.params), null, null, false);
        return empty();
      },
    },
    {
      method: 'PUT', url: '/identities/:id/trace', operationId: 'updateIdentityTracing', tag,
      summary: 'Enable or disable data-flow tracing for an identity', access: 'identity.update', actsOn: onIdentity(deps.store, 'trace'),
      params: IdParams, body: TraceSpecBody, response: { 200: detailEnvelope(TraceDetail, 'null') },
      handler: async (req) => {
        const id = idOf(req.params);
        if (!(await store.get('SELECT 1 FROM identities WHERE id = ?', [id]))) throw notFound('identity', id);
        const body = (req.body ?? {}) as TraceSpec & { channels?: string[] | null };
        return okNullMeta(traces.update(id, { ...body, channels: body.channels ?? undefined }));
      },
    },
  ];
}
