import { agentNames } from '../agent/agent.repository';
import { type BeliefRow, beliefsByIds } from '../belief/belief.repository';
import { currentSnapshot, searchInTx } from '../belief/nearest.repository';
import { encodeReadPoint } from '../belief/snapshot';
import { type EffectRow, effectsByIds } from '../effect/effect.repository';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { decodeCursor, encodeCursor } from '../kernel/cursor';
import { gid, parseGid, type NodeType } from '../kernel/ids';
import { capped, exactMinor, type Money, type Totals } from '../kernel/money';
import { decodeDepthCursor, pageOf, pageSize } from '../kernel/page';
import { readReceipt } from '../retraction/receipt';
import { newestRetractionId, retractionsByIds, type RetractionRow } from '../retraction/retraction.repository';
import {
  type ReversalRow,
  reversalsInStatuses,
  reversalsOfEffects,
  sumInStatuses,
} from '../reversal/reversal.repository';
import type { Tx } from '../store/tx';
import * as v from '../validation';
import { formatMoney } from './format';
import type { BeliefOut, EffectOut, MoneyOut, OwedOut, ReceiptOut, ReversalOut, SearchOut } from './schemas';

/**
 * What the receipt tools read, one function per tool, formatted for MCP from the same read model
 * GraphQL uses (src/retraction/receipt.ts and the repositories). Each runs inside the caller's
 * reader transaction (src/mcp/reader.ts): one snapshot, one fleet, no writes. Pages and depth
 * limits bound every query.
 */

/** An input id: the plain database id, or a global id of the expected type. */
export function parseAnyId(field: string, value: string, type: NodeType): string {
  const s = value.trim();
  if (/^[0-9]+$/.test(s)) return v.id(field, s);
  return parseGid(field, s, type);
}

const iso = (d: Date | string | null): string | null => (d == null ? null : new Date(d).toISOString());
export const money = (amountMinor: number | string, currency: string): MoneyOut => {
  const c = capped(amountMinor);
  return {
    amountMinor: c.amountMinor,
    amountMinorExact: exactMinor(amountMinor).toString(),
    amountMinorCapped: c.capped,
    currency,
    formatted: formatMoney(exactMinor(amountMinor), currency),
  };
};
const monies = (list: Money[]): MoneyOut[] => list.map((m) => money(m.amountMinor, m.currency));
const amountOf = (r: { amount_minor: string | null; currency: string | null }) =>
  r.amount_minor != null && r.currency ? money(r.amount_minor, r.currency) : null;

const agentOut = (id: string, names: Map<string, string>) => ({
  id: gid('Agent', id),
  dbId: id,
  name: names.get(id) ?? `agent ${id}`,
});

export function beliefOut(r: BeliefRow, names: Map<string, string>): BeliefOut {
  return {
    id: gid('Belief', r.id),
    dbId: r.id,
    claimKey: r.claim_key,
    statement: r.statement,
    value: r.value ?? null,
    status: r.status,
    grounded: r.grounded,
    evidence: r.evidence,
    author: agentOut(r.author_id, names),
    createdAt: iso(r.created_at)!,
    retractedAt: iso(r.retracted_at),
    retractionId: r.retraction_id ? gid('Retraction', r.retraction_id) : null,
  };
}

export function effectOut(r: EffectRow, reversal: ReversalRow | undefined): EffectOut {
  return {
    id: gid('Effect', r.id),
    dbId: r.id,
    kind: r.kind,
    status: r.status,
    amount: amountOf(r),
    idempotencyKey: r.idempotency_key,
    externalRef: r.external_ref,
    createdAt: iso(r.created_at)!,
    executedAt: iso(r.executed_at),
    cancelledAt: iso(r.cancelled_at),
    cancelledBy: r.cancelled_by ? gid('Retraction', r.cancelled_by) : null,
    reversal: reversal ? { id: gid('Reversal', reversal.id), status: reversal.status } : null,
  };
}

function reversalOut(r: ReversalRow, effect: EffectRow, retraction: RetractionRow): ReversalOut {
  return {
    id: gid('Reversal', r.id),
    dbId: r.id,
    status: r.status,
    idempotencyKey: r.idempotency_key,
    amount: amountOf(r),
    reason: r.reason,
    providerRef: r.provider_ref,
    lastError: r.last_error,
    createdAt: iso(r.created_at)!,
    dispatchedAt: iso(r.dispatched_at),
    confirmedAt: iso(r.confirmed_at),
    effect: {
      id: gid('Effect', effect.id),
      kind: effect.kind,
      idempotencyKey: effect.idempotency_key,
      externalRef: effect.external_ref,
    },
    retraction: { id: gid('Retraction', retraction.id), reason: retraction.reason },
  };
}

export function retractionOut(t: RetractionRow, root: BeliefRow, names: Map<string, string>) {
  return {
    id: gid('Retraction', t.id),
    dbId: t.id,
    reason: t.reason,
    createdAt: iso(t.created_at)!,
    actor: agentOut(t.actor_id, names),
    root: beliefOut(root, names),
  };
}

const AFTER_RULE = 'must be an endCursor returned by a previous page';

/** Page size 1…500 (default 50), and an `after` that must be a cursor this connection issued (`check` throws otherwise). */
function pageArgs(first: number | undefined, after: string | undefined, check: (s: string) => unknown) {
  const n = pageSize('first', first);
  if (after !== undefined && after !== '') check(after);
  return { first: n, after: after || null };
}

export interface ReceiptArgs {
  retractionId?: string;
  beliefId?: string;
  first?: number;
  after?: string;
}

/**
 * A receipt: the retraction (named directly, through any belief it took down, or the newest when
 * neither is given), one page of its beliefs in cascade order, the effects it cancelled or reached
 * in flight, its reversals, and its totals — all from one snapshot.
 */
export async function getReceipt(
  tx: Tx,
  fleet: string,
  args: ReceiptArgs,
  opts: { mayReadActive: boolean },
): Promise<ReceiptOut> {
  if (args.retractionId && args.beliefId) throw badInput('beliefId', 'give retractionId or beliefId, not both');
  const { first, after } = pageArgs(args.first, args.after, (s) => decodeDepthCursor('after', s, AFTER_RULE));
  let id: string;
  if (args.retractionId) {
    id = parseAnyId('retractionId', args.retractionId, 'Retraction');
  } else if (args.beliefId) {
    const beliefId = parseAnyId('beliefId', args.beliefId, 'Belief');
    const [b] = await beliefsByIds(tx, fleet, [beliefId]);
    // A reader without beliefs:read may not read an ACTIVE belief (src/agent/access.ts), not even its claim key or
    // that it exists: it hears what it would of an id that names no belief.
    if (!b?.retraction_id && !opts.mayReadActive) throw notFound('belief', beliefId, 'beliefId');
    if (!b) throw notFound('belief', beliefId, 'beliefId');
    if (!b.retraction_id)
      throw new DomainError(
        'NOT_FOUND',
        `beliefId: belief ${beliefId} (${b.claim_key}) is ACTIVE; no retraction took it down`,
        'beliefId',
      );
    id = b.retraction_id;
  } else {
    const newest = await newestRetractionId(tx, fleet);
    if (!newest) throw new DomainError('NOT_FOUND', `fleet ${fleet} has no retractions yet`);
    id = newest;
  }
  const r = await readReceipt(tx, fleet, id, first, after);
  if (!r) throw notFound('retraction', id, args.retractionId ? 'retractionId' : undefined);
  const effect = (e: EffectRow) => effectOut(e, r.reversalOf.get(e.id));
  return {
    retraction: retractionOut(r.retraction, r.root, r.names),
    beliefs: {
      items: r.beliefs.items.map((b) => ({ ...beliefOut(b, r.names), depth: b.depth })),
      totalCount: r.beliefs.totalCount,
      hasNextPage: r.beliefs.hasNextPage,
      endCursor: r.beliefs.endCursor,
    },
    cancelledEffects: r.cancelledEffects.map(effect),
    reachedInFlight: r.reachedInFlight.map(effect),
    reversals: r.reversals.map((x) => reversalOut(x, r.effects.get(x.effect_id)!, r.retraction)),
    totals: totalsOut(r.totals),
  };
}

/** A retraction's (or a preview's) figures, money formatted. */
export function totalsOut(t: Totals): ReceiptOut['totals'] {
  return {
    ...t,
    exposure: monies(t.exposure),
    owed: monies(t.owed),
    unreachableAmount: monies(t.unreachableAmount),
    settled: monies(t.settled),
  };
}

export interface OwedArgs {
  statuses?: ReadonlyArray<'OWED' | 'DISPATCHED' | 'FAILED'>;
  first?: number;
  after?: string;
}

const encodeOwedCursor = (id: string) => encodeCursor('o1', [id]);
const decodeOwedCursor = (s: string) => decodeCursor('after', s, 'o1', ['id'], AFTER_RULE)[0]!;

/**
 * Reversals owed and not yet settled (OWED, DISPATCHED, FAILED by default), oldest first and
 * keyset-paged, with the count and per-currency sum over every matching reversal.
 */
export async function listOwedReversals(tx: Tx, fleet: string, args: OwedArgs): Promise<OwedOut> {
  const { first, after } = pageArgs(args.first, args.after, decodeOwedCursor);
  const statuses = [...new Set(args.statuses ?? (['OWED', 'DISPATCHED', 'FAILED'] as const))];
  const rows = await reversalsInStatuses(tx, fleet, statuses, first, after ? decodeOwedCursor(after) : null);
  const agg = await sumInStatuses(tx, fleet, statuses);
  const page = pageOf(rows, first, (r) => encodeOwedCursor(r.id), agg.n);
  const effects = new Map(
    (
      await effectsByIds(
        tx,
        fleet,
        page.items.map((r) => r.effect_id),
      )
    ).map((e) => [e.id, e]),
  );
  const retractions = new Map(
    (
      await retractionsByIds(
        tx,
        fleet,
        page.items.map((r) => r.retraction_id),
      )
    ).map((t) => [t.id, t]),
  );
  return {
    items: page.items.map((r) => reversalOut(r, effects.get(r.effect_id)!, retractions.get(r.retraction_id)!)),
    totalCount: page.totalCount,
    hasNextPage: page.hasNextPage,
    endCursor: page.endCursor,
    owed: agg.sums.map((s) => money(s.amount, s.currency)),
  };
}

/** The reversals of these effects, by effect id (for effects listed outside a receipt). */
export async function reversalsByEffect(
  tx: Tx,
  fleet: string,
  effectIds: readonly string[],
): Promise<Map<string, ReversalRow>> {
  return new Map((await reversalsOfEffects(tx, fleet, effectIds)).map((r) => [r.effect_id, r]));
}

export interface SearchArgs {
  text: string;
  k?: number;
  includeRetracted?: boolean;
  claimKeyPrefix?: string;
}

/**
 * READ over belief embeddings (src/belief/nearest.repository.ts: exact within a claim-key prefix
 * of up to EXACT_PREFIX_MAX beliefs, else HNSW with pgvector's iterative scan so the filters still
 * yield k hits), ACTIVE only unless includeRetracted (then exact over the fleet's rows); `vector`
 * is the query text's embedding. Returns the hits nearest first and the snapshot of the same
 * transaction as the read point.
 */
export async function searchBeliefs(
  tx: Tx,
  fleet: string,
  args: SearchArgs & { vector: number[] },
): Promise<SearchOut> {
  const k = args.k ?? 10;
  const prefix = v.claimKeyPrefix('claimKeyPrefix', args.claimKeyPrefix);
  const snapshot = await currentSnapshot(tx, fleet);
  const { hits } = await searchInTx(tx, fleet, {
    vector: `[${args.vector.join(',')}]`,
    k,
    includeRetracted: !!args.includeRetracted,
    prefix,
  });
  const names = await agentNames(
    tx,
    fleet,
    hits.map((h) => h.belief.author_id),
  );
  return {
    snapshot: encodeReadPoint({ fleet, snapshot }),
    hits: hits.map((h) => ({ belief: beliefOut(h.belief, names), score: h.score })),
  };
}
