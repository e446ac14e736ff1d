// What RetractStore reads out of an item's value: the text a belief's statement (and so its embedding) is made of,
// whether it passes a search filter, and the items it is derived from.

/** The value field that names the items an item is derived from (see DerivedFromRef); kept in the stored value. */
export const DERIVED_FROM = '__derivedFrom';

/** An item an item rests on: a key in the same namespace, or a namespace and key. */
export type DerivedFromRef = string | { namespace: string[]; key: string };

/** The longest statement RETRACT accepts (src/validation.ts LIMITS.statementMax). */
const STATEMENT_MAX = 4000;
/** The most premises one justification may have (src/validation.ts LIMITS.premisesMax). */
const PREMISES_MAX = 64;

/** Raised for a value RetractStore cannot map, naming the field and the rule; nothing was sent. */
export class RetractStoreError extends Error {
  constructor(
    readonly field: string,
    rule: string,
  ) {
    super(`${field}: ${rule}`);
    this.name = 'RetractStoreError';
  }
}

const show = (x: unknown): string =>
  typeof x === 'string' ? x : typeof x === 'number' || typeof x === 'boolean' ? String(x) : JSON.stringify(x, null, 2);

/**
 * The texts at a path as InMemoryStore's index reads them: `$` is the whole value; `a.b` a field; `a[*]` every
 * element, `a[2]` one; strings, numbers and booleans as they are, objects and arrays as pretty JSON.
 */
function textsAt(value: unknown, path: string): string[] {
  if (path === '$' || path === '') return [show(value)];
  const tokens = path.match(/[^.[\]]+|\[[^\]]*\]/g) ?? [];
  let at: unknown[] = [value];
  for (const t of tokens) {
    const next: unknown[] = [];
    for (const x of at) {
      if (t.startsWith('[')) {
        if (!Array.isArray(x)) continue;
        const i = t.slice(1, -1);
        if (i === '*') next.push(...x);
        else if (/^-?\d+$/.test(i)) next.push(x.at(Number(i)));
      } else if (t === '*' && x !== null && typeof x === 'object') next.push(...Object.values(x));
      else if (x !== null && typeof x === 'object' && t in x) next.push((x as Record<string, unknown>)[t]);
    }
    at = next;
  }
  return at.filter((x) => x !== undefined && x !== null).map(show);
}

/**
 * A belief's statement for an item: the texts at `paths` (the put's `index`, else the store's fields, else the whole
 * value), one per line, within RETRACT's 4,000 characters, NULs and lone surrogates replaced (the server refuses them
 * in a statement; the value keeps them exactly or is refused as it is).
 */
export function statementOf(value: Record<string, unknown>, paths: readonly string[]): string {
  let s = paths.flatMap((p) => textsAt(value, p)).join('\n');
  if (s.trim() === '') s = JSON.stringify(value, null, 2);
  s = s
    .replace(/\u0000/g, '\ufffd')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  if (s.length > STATEMENT_MAX) s = s.slice(0, STATEMENT_MAX).replace(/[\ud800-\udbff]$/, '');
  return s;
}

const OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin']);

/** One filter condition on one top-level field, as InMemoryStore decides it (equality, or $eq … $nin). */
function matches(field: unknown, condition: unknown): boolean {
  if (condition === null || typeof condition !== 'object' || !Object.keys(condition).every((k) => OPERATORS.has(k)))
    return field === condition;
  return Object.entries(condition as Record<string, unknown>).every(([op, c]) => {
    switch (op) {
      case '$eq':
        return field === c;
      case '$ne':
        return field !== c;
      case '$gt':
        return Number(field) > Number(c);
      case '$gte':
        return Number(field) >= Number(c);
      case '$lt':
        return Number(field) < Number(c);
      case '$lte':
        return Number(field) <= Number(c);
      case '$in':
        return Array.isArray(c) && c.includes(field);
      default:
        return !Array.isArray(c) || !c.includes(field); // $nin
    }
  });
}

/** Whether an item's value passes a search filter (every condition holds). */
export function passesFilter(value: Record<string, unknown>, filter: Record<string, unknown> | undefined): boolean {
  return !filter || Object.entries(filter).every(([k, c]) => matches(value[k], c));
}

/** The items a value says it is derived from, as (namespace, key), relative keys read in `namespace`. */
export function derivedFromOf(
  value: Record<string, unknown>,
  namespace: readonly string[],
): Array<{ namespace: string[]; key: string }> {
  const refs = value[DERIVED_FROM];
  if (refs === undefined) return [];
  const field = `value.${DERIVED_FROM}`;
  if (!Array.isArray(refs))
    throw new RetractStoreError(field, 'must be an array of keys or { namespace, key } objects');
  if (refs.length > PREMISES_MAX)
    throw new RetractStoreError(field, `must name at most ${PREMISES_MAX} items (got ${refs.length})`);
  return refs.map((r: unknown, i) => {
    if (typeof r === 'string') return { namespace: [...namespace], key: r };
    const o = r as { namespace?: unknown; key?: unknown } | null;
    if (
      o &&
      typeof o === 'object' &&
      typeof o.key === 'string' &&
      Array.isArray(o.namespace) &&
      o.namespace.length > 0 &&
      o.namespace.every((l) => typeof l === 'string')
    ) {
      return { namespace: o.namespace as string[], key: o.key };
    }
    throw new RetractStoreError(`${field}[${i}]`, 'must be a key (string) or { namespace: string[], key: string }');
  });
}
