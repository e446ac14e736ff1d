import { badInput } from '../errors/domain-error';
import { decodeCursor, encodeCursor } from './cursor';

/**
 * Paging every adapter shares: page sizes, the keyset cursors over a descending id and over
 * cascade order, and the page a repository returns (GraphQL wraps it in a connection, MCP prints it).
 */
export const MAX_PAGE = 500;

/** Validates a page size: 1…MAX_PAGE, default 50. */
export function pageSize(field: string, first: number | null | undefined, dflt = 50): number {
  if (first === undefined || first === null) return dflt;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE)
    throw badInput(field, `must be an integer from 1 to ${MAX_PAGE}`);
  return first;
}

/** One page read with limit first+1 (the extra row says a next page exists), and the count over every page. */
export interface Page<T> {
  items: T[];
  hasNextPage: boolean;
  endCursor: string | null;
  totalCount: number;
}

/** The page of `rows` (fetched with limit first+1), its end cursor by `cursorOf`. */
export function pageOf<T>(rows: T[], first: number, cursorOf: (r: T) => string, totalCount: number): Page<T> {
  const items = rows.slice(0, first);
  const last = items[items.length - 1];
  return { items, hasNextPage: rows.length > first, endCursor: last === undefined ? null : cursorOf(last), totalCount };
}

/**
 * A newest-first keyset page: `rows(limit)` reads up to `limit` rows below the cursor, newest first; `count()` counts
 * every row of the listing (a database count: a number, or int8 as a string).
 */
export async function newestFirstPage<T extends { id: string }>(
  first: number,
  rows: (limit: number) => Promise<T[]>,
  count: () => Promise<number | string | bigint>,
): Promise<Page<T>> {
  return pageOf(await rows(first + 1), first, (r) => encodeIdCursor(r.id), Number(await count()));
}

/** Keyset cursor over a descending id. */
export function encodeIdCursor(id: string): string {
  return encodeCursor('i1', [id]);
}

export function decodeIdCursor(field: string, s: string | null | undefined): string | null {
  if (s == null) return null;
  return decodeCursor(field, s, 'i1', ['id'])[0]!;
}

/** Keyset cursor over cascade order (depth, id). */
export function encodeDepthCursor(depth: number, id: string): string {
  return encodeCursor('d1', [depth, id]);
}

/** A cascade-order position; BAD_USER_INPUT naming `field` when `s` is not such a cursor. */
export function decodeDepthCursor(field: string, s: string, rule?: string): { depth: number; id: string } {
  const [depth, id] = decodeCursor(field, s, 'd1', ['int', 'id'], rule);
  return { depth: Number(depth), id: id! };
}
