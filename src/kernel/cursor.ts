import { badInput } from '../errors/domain-error';

/**
 * One codec for every opaque cursor: base64url of `<tag>:<n>:<n>…`. Each component is checked
 * against the range of the column it is compared with, so a forged or corrupted cursor is
 * BAD_USER_INPUT naming the field instead of a database cast error (or, for xid8 on PostgreSQL 15,
 * a silent wrap to a position no transaction will ever reach).
 */
export type Component =
  /** A row id: bigint, 1…2^63−1. */
  | 'id'
  /** A bigint sequence: 0…2^63−1. */
  | 'seq'
  /** A 64-bit transaction id (xid8): 0…2^64−1. */
  | 'xid8'
  /** An int column (e.g. a cascade depth): 0…2^31−1. */
  | 'int'
  /** A position inside a row: −1 (none) …2^31−1. */
  | 'index';

const RANGE: Record<Component, [bigint, bigint]> = {
  id: [1n, 2n ** 63n - 1n],
  seq: [0n, 2n ** 63n - 1n],
  xid8: [0n, 2n ** 64n - 1n],
  int: [0n, 2n ** 31n - 1n],
  index: [-1n, 2n ** 31n - 1n],
};

/** Whether `s` is a canonical decimal (no sign but −1's, no leading zeros) within the component's range. */
export function inRange(kind: Component, s: string): boolean {
  if (!/^(0|-1|[1-9][0-9]{0,19})$/.test(s)) return false;
  const n = BigInt(s);
  const [lo, hi] = RANGE[kind];
  return n >= lo && n <= hi;
}

export function encodeCursor(tag: string, parts: ReadonlyArray<string | number>): string {
  return Buffer.from(`${tag}:${parts.join(':')}`).toString('base64url');
}

/** Why `s` is not a cursor of this tag and shape, or its components as decimal strings. */
function parse(s: string, tag: string, shape: readonly Component[]): { parts: string[] } | { why: string | null } {
  if (typeof s !== 'string' || s.length > 200 || !/^[A-Za-z0-9_=-]*$/.test(s)) return { why: null };
  const parts = Buffer.from(s, 'base64url').toString('utf8').split(':');
  if (parts.shift() !== tag || parts.length !== shape.length) return { why: null };
  const bad = parts.findIndex((p, i) => !inRange(shape[i]!, p));
  if (bad < 0) return { parts };
  const [lo, hi] = RANGE[shape[bad]!];
  return {
    why: `its ${shape[bad]} component ${JSON.stringify(parts[bad]!.slice(0, 30))} is not an integer from ${lo} to ${hi}`,
  };
}

/** The components of a cursor of this tag and shape, as decimal strings; null when it is not one. */
export function tryDecodeCursor(s: string, tag: string, shape: readonly Component[]): string[] | null {
  const r = parse(s, tag, shape);
  return 'parts' in r ? r.parts : null;
}

/** As tryDecodeCursor, but a cursor that is not one of this shape is BAD_USER_INPUT naming `field`. */
export function decodeCursor(
  field: string,
  s: string,
  tag: string,
  shape: readonly Component[],
  rule = 'must be a cursor returned by this connection',
): string[] {
  const r = parse(s, tag, shape);
  if ('parts' in r) return r.parts;
  throw badInput(field, r.why ? `${rule}; ${r.why}` : rule);
}
