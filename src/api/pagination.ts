import { decodeCursor, encodeCursor } from '../kernel/cursor';
import { MAX_PAGE, pageSize } from '../retraction/retraction.service';

export { MAX_PAGE };

/** Keyset cursor over a descending id. */
export function encodeIdCursor(id: string): string {
  return encodeCursor('i1', [id]);
}

export function decodeIdCursor(field: string, s: string | null | undefined): string | null {
  if (s == null) return null;
  return decodeCursor(field, s, 'i1', ['id'])[0]!;
}

export interface ConnectionShape<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: number;
}

/** Builds a connection from rows fetched with limit first+1 (the extra row says a next page exists). */
export function connectionOf<T>(rows: T[], first: number, cursorOf: (r: T) => string, totalCount: number, hasPrevious = false): ConnectionShape<T> {
  const items = rows.slice(0, first);
  const edges = items.map((node) => ({ cursor: cursorOf(node), node }));
  return {
    edges,
    pageInfo: {
      hasNextPage: rows.length > first,
      hasPreviousPage: hasPrevious,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges[edges.length - 1]?.cursor ?? null,
    },
    totalCount,
  };
}

export function firstArg(first: number | null | undefined): number {
  return pageSize('first', first);
}
