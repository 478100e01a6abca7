/**
 * Parameterised SQL fragments. Every piece of SQL the filter compiler emits is an `Sql` value built with
 * the `sql` template tag, which accepts only other fragments or `param(...)` placeholders in its holes. A
 * user-supplied value therefore has no way into the SQL text: it can only become a `?` with its value in
 * `params`, and parameters stay in the same order as their placeholders because fragments carry their own.
 * Text written by the project itself (symbol-table columns, dialect keywords) enters through `trusted`.
 */

export interface Sql {
  readonly text: string;
  readonly params: readonly unknown[];
}

/** A bound value waiting for its `?`. Only created through `param`, so the tag can tell it from a fragment. */
export interface Param {
  readonly kind: 'param';
  readonly value: unknown;
}

export function param(value: unknown): Param {
  return { kind: 'param', value };
}

/** SQL text the project wrote (never derived from a request). */
export function trusted(text: string): Sql {
  return { text, params: [] };
}

function isParam(part: Sql | Param): part is Param {
  return (part as Param).kind === 'param';
}

/** Template tag: static text is copied, `${fragment}` is spliced with its params, `${param(v)}` becomes `?`. */
export function sql(strings: TemplateStringsArray, ...parts: (Sql | Param)[]): Sql {
  let text = strings[0];
  const params: unknown[] = [];
  parts.forEach((part, i) => {
    if (isParam(part)) {
      text += '?';
      params.push(part.value);
    } else {
      text += part.text;
      params.push(...part.params);
    }
    text += strings[i + 1];
  });
  return { text, params };
}

/** Joins fragments with a fixed separator such as `, ` or ` AND `. */
export function joinSql(fragments: readonly Sql[], separator: string): Sql {
  return {
    text: fragments.map((f) => f.text).join(separator),
    params: fragments.flatMap((f) => f.params),
  };
}
