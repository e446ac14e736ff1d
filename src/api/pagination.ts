import { type Page, pageSize } from '../kernel/page';

/** A Relay connection as the types' resolvers return it. */
export interface ConnectionShape<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: number;
}

/** A repository's page as a connection; every edge's cursor by `cursorOf` (the page's own end cursor is the last of them). */
export function connectionOf<T, N = T>(page: Page<T>, cursorOf: (r: T) => string, hasPrevious: boolean, node: (r: T) => N = (r) => r as unknown as N): ConnectionShape<N> {
  const edges = page.items.map((r) => ({ cursor: cursorOf(r), node: node(r) }));
  return {
    edges,
    pageInfo: { hasNextPage: page.hasNextPage, hasPreviousPage: hasPrevious, startCursor: edges[0]?.cursor ?? null, endCursor: page.endCursor },
    totalCount: page.totalCount,
  };
}

export function firstArg(first: number | null | undefined): number {
  return pageSize('first', first);
}

/** The `first` and `after` arguments every connection takes. */
export const pageArgs = (t: { arg: { int: Function; string: Function } }) => ({
  first: (t.arg.int as (o: object) => never)({ description: 'Page size, at most 500 (default 50).' }),
  after: (t.arg.string as (o: object) => never)({ description: 'A cursor from this connection.' }),
});
