import { notFound } from '../errors/domain-error';
import type { Scope } from '../agent/scopes';
import { type NodeType, parseGid } from '../kernel/ids';
import { readTx, type Tx } from '../store/tx';
import type { FieldMap, ObjectParam } from '@pothos/core';
import type { Readable } from '../agent/access';
import { type Context, builder, readRule } from './builder';
import type { Types } from './shapes';
import { listBound } from './list-bounds';
import { limitError } from '../errors/limit-error';

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
 * Ids one batched statement may name. A request can reach tens of thousands of rows of one type at once, and
 * PostgreSQL takes at most 65,535 parameters per statement: DataLoader splits a bigger batch into statements of
 * this many ids (one round trip each; 1,000 ids cost about as much per id as 10,000 in one).
 */
export const MAX_BATCH_IDS = 1_000;

/**
 * A list field of the parent `P`, read in batches: one `read` of the caller's fleet for every parent the request
 * reached (by id), its rows grouped by `key` in the parents' order (a parent without rows gets an empty list),
 * each row as `item` gives it (a loadable node's id, or the row itself). `field` (`Type.field`) names its bound in
 * src/api/list-bounds.ts: a parent with more rows answers LIMIT_EXCEEDED for this field alone, so the count the
 * cost rule made before the operation ran stays true.
 */
export function listByParent<P extends { id: string }, T, V = T>(
  t: PothosSchemaTypes.ObjectFieldBuilder<Types, P>,
  o: {
    field: string;
    type: ObjectParam<Types>;
    description: string;
    read: (tx: Tx, fleet: string, ids: readonly string[]) => Promise<T[]>;
    key: (r: T) => string;
    item?: (r: T) => V;
    /** An item the caller may not read is null with its FORBIDDEN error, not the whole list. */
    nullableItems?: boolean;
  },
) {
  const item = o.item ?? ((r: T) => r as unknown as V);
  const [type, field] = o.field.split('.') as [string, string];
  const bound = listBound(type, field);
  const load = async (ids: string[], ctx: Context): Promise<Array<V[] | Error>> =>
    grouped(ids, await fleetRead(ctx, (tx, fleet) => o.read(tx, fleet, ids)), o.key).map((g) =>
      g.length > bound
        ? limitError('list', `${o.field} lists at most ${bound} items, and this one has more`)
        : g.map(item),
    );
  return t.loadableList({
    type: o.type,
    description: o.description,
    ...(o.nullableItems ? { nullable: { list: false, items: true } as const } : {}),
    load: load,
    resolve: (p: P) => p.id,
    loaderOptions: { maxBatchSize: MAX_BATCH_IDS },
  });
}

const VALID_ID = /^[1-9][0-9]{0,18}$/;

/** Ids that can be database ids; the others are simply not found. */
function validIds(ids: readonly string[]): string[] {
  return ids.map(String).filter((id) => VALID_ID.test(id) && BigInt(id) <= 9223372036854775807n);
}

/** A fleet row type with a global id, loaded in batches by its repository's `byIds` (`what` names it in NOT_FOUND). */
function fleetNodeRef<T extends { id: string }>(
  name: NodeType,
  what: string,
  byIds: (tx: Tx, fleet: string, ids: readonly string[]) => Promise<T[]>,
) {
  return builder.loadableNodeRef(name, {
    id: { resolve: (r: T) => r.id },
    loaderOptions: { cache: false, maxBatchSize: MAX_BATCH_IDS },
    load: async (ids: string[], ctx: Context): Promise<Array<T | Error>> => {
      const valid = validIds(ids);
      return inOrder(what, ids, valid.length === 0 ? [] : await fleetRead(ctx, (tx, fleet) => byIds(tx, fleet, valid)));
    },
  });
}

/** A fleet node type's description, its fields, and the rule it is read under. */
export interface FleetNodeOptions<T> {
  description: string;
  /**
   * The scopes that read it (src/agent/access.ts), or the rule its row names; a request whose own mutation wrote or
   * answered with the row reads it too. Absent: no rule of its own.
   */
  readable?: Readable | ((row: T) => Readable);
  fields: (t: PothosSchemaTypes.ObjectFieldBuilder<Types, T>) => FieldMap;
}

/** A fleet node type (`fleetNodeRef`), implemented. */
export function fleetNode<T extends { id: string }>(
  name: NodeType,
  byIds: (tx: Tx, fleet: string, ids: readonly string[]) => Promise<T[]>,
  o: FleetNodeOptions<T>,
): FleetNodeRef<T> {
  const ref = fleetNodeRef<T>(name, name.toLowerCase(), byIds);
  const { readable } = o;
  const rule =
    readable === undefined
      ? {}
      : {
          authScopes: (r: T, ctx: Context) =>
            readRule(ctx, typeof readable === 'function' ? readable(r) : readable, { type: name, id: r.id }),
        };
  ref.implement({ description: o.description, ...rule, fields: o.fields });
  return ref;
}

/** The ref of a fleet node type. */
export type FleetNodeRef<T extends { id: string }> = ReturnType<typeof fleetNodeRef<T>>;

/** The query field that reads one node of `type` of the caller's fleet by its global id (`scope` to hold). */
export function nodeById<T extends { id: string }>(
  t: PothosSchemaTypes.QueryFieldBuilder<Types, object>,
  type: FleetNodeRef<T>,
  scope: Scope,
  description: string,
) {
  return t.field({
    type,
    nullable: true,
    authScopes: { scope },
    description,
    args: { id: t.arg.id({ required: true, description: 'Global id.' }) },
    // A loadable node resolves from its database id; the loader reads the row. The cast: Pothos types this
    // result as a conditional type over T (a list or one item), which TypeScript cannot evaluate while T is
    // generic; for any concrete T it is `T | string`, and a string id is what the loadable ref takes.
    resolve: (_r, a) => parseGid('id', String(a.id), type.name as NodeType) as never,
  });
}
