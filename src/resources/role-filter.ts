/**
 * `roleFilter` / `roleSemantic` on list operations: the records whose role attributes match the `#`
 * roles (every one under AllOf, the default; at least one under AnyOf), unioned with the records named by
 * `@id` roles. As upstream, `#all` here is not special: it means "has the attribute named all".
 */
import { fieldError } from '../errors.ts';
import { parseSemantic } from '../policy/role-ref.ts';

interface AttributeTable {
  table: string;
  ownerColumn: string;
  valueColumn: string;
}

export function roleFilterSql(attrs: AttributeTable, roles: string[], semantic: string | undefined): { sql: string; params: unknown[] } {
  const sem = parseSemantic(semantic);
  if (!sem) throw fieldError('semantic', `invalid semantic ${semantic ?? ''}`, semantic);
  const ids: string[] = [];
  const attributes: string[] = [];
  for (const role of roles) {
    if (role.length > 1 && role[0] === '@') ids.push(role.slice(1));
    else if (role.length > 1 && role[0] === '#') attributes.push(role.slice(1));
    else throw fieldError('roleFilter', `invalid role ${role}: roles must start with # or @`, role);
  }
  const parts: string[] = [];
  const params: unknown[] = [];
  if (ids.length > 0) {
    parts.push(`e.id IN (${ids.map(() => '?').join(', ')})`);
    params.push(...ids);
  }
  if (attributes.length > 0) {
    const has = `EXISTS (SELECT 1 FROM ${attrs.table} ra WHERE ra.${attrs.ownerColumn} = e.id AND ra.${attrs.valueColumn} = ?)`;
    parts.push(`(${attributes.map(() => has).join(sem === 'AllOf' ? ' AND ' : ' OR ')})`);
    params.push(...attributes);
  }
  return { sql: parts.length ? parts.join(' OR ') : '1 = 1', params };
}
