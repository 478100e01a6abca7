/**
 * The config types a fresh 0.27-era controller creates, with their fixed ids and JSON Schemas. Tunnelers, the
 * `ziti` CLI and the admin console look these types up by name or id and validate configs (and build forms)
 * against the schemas, `definitions`, `$ref`s and `deprecated` flags included, so the schemas are upstream's own
 * documents, kept as data in `builtin-config-types.json` exactly as upstream serves them from `GET /config-types`
 * (docs/upstream/model.md §3.15, §4.3). Validation of config data must treat `idn-hostname` as an always-true
 * format (upstream's validator ignores it, which is what lets wildcards and CIDRs through as addresses) and check
 * `ipv4`, `ipv6`. Not included: `router.link.v1` (HEAD-only) and `host-interfaces.v1` (only on upgraded databases).
 */
import { readFileSync } from 'node:fs';

export interface BuiltinConfigType {
  id: string;
  name: string;
  schema: Record<string, unknown>;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** In upstream's creation order. Ids are fixed upstream values (two UUIDs, two shortids, the rest equal the name). */
export const builtinConfigTypes: readonly BuiltinConfigType[] = deepFreeze(
  JSON.parse(readFileSync(new URL('./builtin-config-types.json', import.meta.url), 'utf8')) as BuiltinConfigType[],
);
