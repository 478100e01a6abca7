/**
 * Role references as policies and role filters write them: `#all`, `#<attribute>` or `@<entity id>`.
 * This is the one parser of role strings; everything past the boundary works with the typed RoleRef.
 */
export type RoleRef = { kind: 'all' } | { kind: 'attribute'; name: string } | { kind: 'id'; id: string };

export type Semantic = 'AllOf' | 'AnyOf';

/** Parses one role string; undefined when it is neither `#...` nor `@...`. */
export function parseRoleRef(role: string): RoleRef | undefined {
  if (role === '#all') return { kind: 'all' };
  if (role.length > 1 && role[0] === '#') return { kind: 'attribute', name: role.slice(1) };
  if (role.length > 1 && role[0] === '@') return { kind: 'id', id: role.slice(1) };
  return undefined;
}

/** Upstream compares the semantic case-insensitively and defaults to AllOf. */
export function parseSemantic(value: string | undefined): Semantic | undefined {
  if (value === undefined || value === '') return 'AllOf';
  const v = value.toLowerCase();
  if (v === 'allof') return 'AllOf';
  if (v === 'anyof') return 'AnyOf';
  return undefined;
}
