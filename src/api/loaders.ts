import { notFound } from '../errors/domain-error';
import type { Scope } from '../agent/scopes';
import { type NodeType, parseGid } from '../kernel/ids';
import { readTx, type Tx } from '../store/tx';
import { type Context, builder } from './builder';
import type { Types } from './shapes';

/**
 * Batch loads behind every relation. Each batch is one repository call inside one read-only
 * transaction of the caller's fleet: the repository names the fleet, row-level security repeats it.
 */
export function fleetRead<T>(ctx: Context, fn: (tx: Tx, fleet: string) => Promise<T>): Promise<T> {
  if (!ctx.agent) throw new Error('fleetRead without an authenticated agent');
  const fleet = ctx.agent.fleet_id;
  return readTx(ctx.core.store, fleet, (tx) => fn(tx, fleet));
}

/** Orders rows to match ids; a missing id yields a NOT_FOUND error in its place. */
function inOrder<T extends { id: string }>(what: string, ids: readonly string[], rows: T[]): Array<T | Error> {
  const m = new Map(rows.map((r) => [String(r.id), r]));
  return ids.map((id) => m.get(String(id)) ?? notFound(what, id));
}

/** Groups rows by key, in ids' order; every id gets a (possibly empty) list. */
function grouped<T>(ids: readonly string[], rows: T[], key: (r: T) => string): T[][] {
  const m = new Map<string, T[]>();
  for (const r of rows) {
    const k = key(r);
    if (!m.has(k)) m.set(k, []);
    m.get(k)!.push(r);
  }
  return ids.map((id) => m.get(String(id)) ?? []);
}

/**
 * A loadable list's batch: one `read` of the caller's fleet for every id, its rows grouped by `key` in the ids'
 * order (an id without rows gets an empty list), each row as `item` gives it.
 */
export function groupedLoad<T, V = T>(
  read: (tx: Tx, fleet: string, ids: readonly string[]) => Promise<T[]>,
  key: (r: T) => string,
  item: (r: T) => V = (r) => r as unknown as V,
) {
  return async (ids: string[], ctx: Context): Promise<V[][]> =>
    grouped(ids, await fleetRead(ctx, (tx, fleet) => read(tx, fleet, ids)), key).map((g) => g.map(item));
}

const VALID_ID = /^[1-9][0-9]{0,18}$/;

/** Ids that can be database ids; the others are simply not found. */
function validIds(ids: readonly string[]): string[] {
  return ids.map(String).filter((id) => VALID_ID.test(id) && BigInt(id) <= 9223372036854775807n);
}

/** A fleet row type with a global id, loaded in batches by its repository's `byIds` (`what` names it in NOT_FOUND). */
export function fleetNodeRef<T extends { id: string }>(name: NodeType, what: string, byIds: (tx: Tx, fleet: string, ids: readonly string[]) => Promise<T[]>) {
  return builder.loadableNodeRef(name, {
    id: { resolve: (r: T) => r.id },
    loaderOptions: { cache: false },
    load: async (ids: string[], ctx: Context): Promise<Array<T | Error>> => {
      const valid = validIds(ids);
      return inOrder(what, ids, valid.length === 0 ? [] : await fleetRead(ctx, (tx, fleet) => byIds(tx, fleet, valid)));
    },
  });
}

/** The query field that reads one node of `type` of the caller's fleet by its global id (`scope` to hold). */
export function nodeById<T extends { id: string }>(
  t: PothosSchemaTypes.QueryFieldBuilder<Types, object>,
  type: ReturnType<typeof fleetNodeRef<T>>,
  scope: Scope,
  description: string,
) {
  return t.field({
    type, nullable: true, authScopes: { scope }, description,
    args: { id: t.arg.id({ required: true, description: 'Global id.' }) },
    // A loadable node resolves from its database id; the loader reads the row.
    resolve: (_r, a) => parseGid('id', String(a.id), type.name as NodeType) as never,
  });
}
