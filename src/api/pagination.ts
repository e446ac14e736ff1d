import { type Page, decodeIdCursor, encodeIdCursor, pageSize } from '../kernel/page';
import type { Tx } from '../store/tx';
import type { ObjectRef } from '@pothos/core';
import { type Context, builder } from './builder';
import { fleetRead } from './loaders';
import type { Types } from './shapes';

/** A Relay connection as the types' resolvers return it. */
export interface ConnectionShape<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: number;
}

/** A repository's page as a connection; every edge's cursor by `cursorOf` (the page's own end cursor is the last of them). */
export function connectionOf<T, N = T>(
  page: Page<T>,
  cursorOf: (r: T) => string,
  hasPrevious: boolean,
  node: (r: T) => N = (r) => r as unknown as N,
): ConnectionShape<N> {
  const edges = page.items.map((r) => ({ cursor: cursorOf(r), node: node(r) }));
  return {
    edges,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      hasPreviousPage: hasPrevious,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: page.endCursor,
    },
    totalCount: page.totalCount,
  };
}

/** A newest-first connection of the caller's fleet: `read` returns the page below the `after` id. */
export async function newestFirst<T extends { id: string }>(
  ctx: Context,
  args: { first?: number | null; after?: string | null },
  read: (tx: Tx, fleet: string, first: number, after: string | null) => Promise<Page<T>>,
): Promise<ConnectionShape<T>> {
  const first = firstArg(args.first);
  const after = decodeIdCursor('after', args.after);
  return connectionOf(
    await fleetRead(ctx, (tx, fleet) => read(tx, fleet, first, after)),
    (r) => encodeIdCursor(r.id),
    after !== null,
  );
}

export function firstArg(first: number | null | undefined): number {
  return pageSize('first', first);
}

/** The `first` and `after` arguments every connection takes. */
export const pageArgs = (t: { arg: { int: Function; string: Function } }) => ({
  first: (t.arg.int as (o: object) => never)({ description: 'Page size, at most 500 (default 50).' }),
  after: (t.arg.string as (o: object) => never)({ description: 'A cursor from this connection.' }),
});

/** The connection type of a node type (`<Type>Connection`, edges `<Type>Edge`), with the count over every page. */
export function countedConnection<T, P>(type: ObjectRef<Types, T, P>, what: { page: string; edge: string }) {
  const name = type.name;
  return builder.connectionObject(
    {
      type,
      name: `${name}Connection`,
      description: what.page,
      fields: (t) => ({
        totalCount: t.int({
          description: 'How many there are in all.',
          resolve: (c) => (c as unknown as { totalCount: number }).totalCount,
        }),
      }),
    },
    { name: `${name}Edge`, description: what.edge },
  );
}
