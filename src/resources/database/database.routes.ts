/**
 * Database operations of the management API: start a data-integrity check or fix run (202, one run at a time),
 * read the current/last run's results, and write a snapshot (at most one per minute). Admins only, as upstream.
 */
import { Type } from '@sinclair/typebox';
import type { RouteSpec } from '../../http/route.ts';
import { empty, emptyEnvelope } from '../../http/envelope.ts';
import { ListMeta } from '../common.schema.ts';
import type { DatabaseOps } from './database-ops.ts';

const tag = 'Database';

const nullableString = (format?: string) => Type.Unsafe<string | null>({ type: ['string', 'null'], ...(format ? { format } : {}) });

const IntegrityResult = Type.Object({ description: Type.String(), fixed: Type.Boolean() });

export const DataIntegrityDetails = Type.Object({
  endTime: nullableString('date-time'),
  error: nullableString(),
  fixingErrors: Type.Boolean(),
  inProgress: Type.Boolean(),
  results: Type.Unsafe<Array<{ description: string; fixed: boolean }> | null>({ type: ['array', 'null'], items: IntegrityResult }),
  startTime: nullableString('date-time'),
  tooManyErrors: Type.Boolean(),
});

export function databaseRoutes(ops: DatabaseOps): RouteSpec[] {
  return [
    {
      method: 'POST', url: '/database/check-data-integrity', operationId: 'checkDataIntegrity', tag,
      summary: 'Start a data integrity scan in the background', access: 'admin',
      response: { 202: emptyEnvelope },
      handler: async (_req, reply) => {
        await ops.startIntegrityRun(false);
        return reply.code(202).send(empty());
      },
    },
    {
      method: 'GET', url: '/database/data-integrity-results', operationId: 'dataIntegrityResults', tag,
      summary: 'The results of the current or last data integrity run', access: 'admin',
      response: { 200: Type.Object({ data: DataIntegrityDetails, meta: ListMeta }) },
      handler: async () => {
        const data = await ops.integrityResults();
        return { data, meta: { pagination: { limit: -1, offset: 0, totalCount: data.results?.length ?? 0 } } };
      },
    },
    {
      method: 'POST', url: '/database/fix-data-integrity', operationId: 'fixDataIntegrity', tag,
      summary: 'Start a data integrity scan that also fixes what it can, after a snapshot', access: 'admin',
      response: { 202: emptyEnvelope },
      handler: async (_req, reply) => {
        await ops.startIntegrityRun(true);
        return reply.code(202).send(empty());
      },
    },
    {
      method: 'POST', url: '/database/snapshot', operationId: 'createDatabaseSnapshot', tag,
      summary: 'Write a snapshot of the database next to it', access: 'admin',
      response: { 200: emptyEnvelope },
      handler: async () => {
        await ops.snapshot();
        return empty();
      },
    },
  ];
}
