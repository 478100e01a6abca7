/**
 * `roleFilter` / `roleSemantic` on list operations: pre-selects records by role attribute (`#attr`),
 * id (`@id`) or `#all`, combined with AllOf (every role matches) or AnyOf (at least one), as SQL over
 * the resource's attribute side table.
 */
import { fieldError } from '../errors.ts';
import { parseRoleRef, parseSemantic } from '../policy/role-ref.ts';

interface AttributeTable {
  table: string;
  ownerColumn: string;
  valueColumn: string;
}

export function roleFilterSql(attrs: AttributeTable, roles: string[], semantic: string | undefined): { sql: string; params: unknown[] } {
  const sem = parseSemantic(semantic);
  if (!sem) throw fieldError('semantic', `invalid semantic ${semantic ?? ''}`, semantic);
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const role of roles) {
    const ref = parseRoleRef(role);
    if (!ref) throw fieldError('roleFilter', `invalid role ${role}: roles must start with # or @`, role);
    if (ref.kind === 'all') parts.push('1 = 1');
    else if (ref.kind === 'id') {
      parts.push('e.id = ?');
      params.push(ref.id);
    } else {
      parts.push(`EXISTS (SELECT 1 FROM ${attrs.table} ra WHERE ra.${attrs.ownerColumn} = e.id AND ra.${attrs.valueColumn} = ?)`);
      params.push(ref.name);
    }
  }
  if (parts.length === 0) return { sql: '1 = 1', params };
  return { sql: parts.map((p) => `(${p})`).join(sem === 'AllOf' ? ' AND ' : ' OR '), params };
}
