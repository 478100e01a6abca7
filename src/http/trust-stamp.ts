/**
 * The `stamp` of records that decide who may log in as whom (external JWT signers, third-party CAs): a create,
 * a put, and a patch that names one of the record's trust fields store the caller's rights as the record's
 * `trustRights` (see auth/rights.ts). A patch of other fields (a name, tags) keeps the rights stored before.
 */
import type { FastifyRequest } from 'fastify';
import { rightsOf } from '../auth/rights.ts';
import { callerOf } from './caller.ts';
import type { CrudOptions } from './crud-routes.ts';

export function trustStamp(trustFields: readonly string[]): NonNullable<CrudOptions['stamp']> {
  return (req: FastifyRequest, mode) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (mode === 'patch' && !trustFields.some((field) => body[field] !== undefined && body[field] !== null)) return undefined;
    return { trustRights: rightsOf(callerOf(req).identity) };
  };
}
