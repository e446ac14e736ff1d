import { sql } from 'kysely';
import { gid, parseGid, type NodeType } from '../kernel/ids';
import { decodeCursor, encodeCursor } from '../kernel/cursor';
import { capped, exactMinor } from '../kernel/money';
import { nearestBeliefs } from '../belief/nearest';
import { encodeReadPoint } from '../belief/snapshot';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { decodeDepthCursor, retractedBeliefPage, totalsFor, type Money as RawMoney } from '../retraction/retraction.repository';
import type { Tx } from '../store/tx';
import * as v from '../validation';
import { formatMoney } from './format';
import type { BeliefOut, EffectOut, ExplainOut, MoneyOut, OwedOut, ReceiptOut, ReversalOut, SearchOut } from './schemas';

/**
 * What the receipt tools read, one function per tool. Each runs inside the caller's reader
 * transaction (src/mcp/reader.ts): one snapshot, one fleet (row-level security), no writes.
 * Costs follow what is shown: pages and depth limits bound every query.
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
  return { amountMinor: c.amountMinor, amountMinorExact: exactMinor(amountMinor).toString(), amountMinorCapped: c.capped, currency, formatted: formatMoney(exactMinor(amountMinor), currency) };
};
const monies = (list: RawMoney[]): MoneyOut[] => list.map((m) => money(m.amountMinor, m.currency));

interface BeliefSql {
  id: string; claim_key: string; statement: string; value: unknown; status: 'ACTIVE' | 'RETRACTED'; grounded: boolean;
  evidence: string | null; author_id: string; author_name: string; created_at: Date; retracted_at: Date | null;
  retraction_id: string | null; retraction_depth: number | null;
}

const BELIEF_SELECT = sql`b.id::text AS id, b.claim_key, b.statement, b.value, b.status, b.grounded, b.evidence,
  b.author_id::text AS author_id, a.name AS author_name, b.created_at, b.retracted_at, b.retraction_id::text AS retraction_id, b.retraction_depth`;

function beliefOut(r: BeliefSql): BeliefOut {
  return {
    id: gid('Belief', r.id), dbId: r.id, claimKey: r.claim_key, statement: r.statement, value: r.value ?? null, status: r.status,
    grounded: r.grounded, evidence: r.evidence, author: { id: gid('Agent', r.author_id), dbId: r.author_id, name: r.author_name },
    createdAt: iso(r.created_at)!, retractedAt: iso(r.retracted_at), retractionId: r.retraction_id ? gid('Retraction', r.retraction_id) : null,
  };
}

async function beliefRows(tx: Tx, ids: readonly string[]): Promise<Map<string, BeliefSql>> {
  if (ids.length === 0) return new Map();
  const r = await sql<BeliefSql>`SELECT ${BELIEF_SELECT} FROM beliefs b JOIN agents a ON a.id = b.author_id
    WHERE b.id = ANY(${ids as string[]}::bigint[])`.execute(tx);
  return new Map(r.rows.map((b) => [b.id, b]));
}

interface EffectSql {
  id: string; kind: string; status: EffectOut['status']; amount_minor: string | null; currency: string | null; idempotency_key: string;
  external_ref: string | null; created_at: Date; executed_at: Date | null; cancelled_at: Date | null; cancelled_by: string | null;
  reversal_id: string | null; reversal_status: string | null;
}

const EFFECT_SELECT = sql`e.id::text AS id, e.kind, e.status, e.amount_minor::text AS amount_minor, e.currency, e.idempotency_key,
  e.external_ref, e.created_at, e.executed_at, e.cancelled_at, e.cancelled_by::text AS cancelled_by,
  rv.id::text AS reversal_id, rv.status AS reversal_status`;

function effectOut(r: EffectSql): EffectOut {
  return {
    id: gid('Effect', r.id), dbId: r.id, kind: r.kind, status: r.status,
    amount: r.amount_minor != null && r.currency ? money(r.amount_minor, r.currency) : null,
    idempotencyKey: r.idempotency_key, externalRef: r.external_ref, createdAt: iso(r.created_at)!, executedAt: iso(r.executed_at),
    cancelledAt: iso(r.cancelled_at), cancelledBy: r.cancelled_by ? gid('Retraction', r.cancelled_by) : null,
    reversal: r.reversal_id ? { id: gid('Reversal', r.reversal_id), status: r.reversal_status! } : null,
  };
}

interface ReversalSql {
  id: string; status: ReversalOut['status']; idempotency_key: string; amount_minor: string | null; currency: string | null;
  reason: string | null; provider_ref: string | null; last_error: string | null; created_at: Date; dispatched_at: Date | null;
  confirmed_at: Date | null; effect_id: string; effect_kind: string; effect_key: string; effect_ref: string | null;
  retraction_id: string; retraction_reason: string;
}

const REVERSAL_FROM = sql`SELECT r.id::text AS id, r.status, r.idempotency_key, r.amount_minor::text AS amount_minor, r.currency, r.reason,
    r.provider_ref, r.last_error, r.created_at, r.dispatched_at, r.confirmed_at,
    e.id::text AS effect_id, e.kind AS effect_kind, e.idempotency_key AS effect_key, e.external_ref AS effect_ref,
    t.id::text AS retraction_id, t.reason AS retraction_reason
  FROM reversals r JOIN effects e ON e.id = r.effect_id JOIN retractions t ON t.id = r.retraction_id`;

function reversalOut(r: ReversalSql): ReversalOut {
  return {
    id: gid('Reversal', r.id), dbId: r.id, status: r.status, idempotencyKey: r.idempotency_key,
    amount: r.amount_minor != null && r.currency ? money(r.amount_minor, r.currency) : null,
    reason: r.reason, providerRef: r.provider_ref, lastError: r.last_error, createdAt: iso(r.created_at)!,
    dispatchedAt: iso(r.dispatched_at), confirmedAt: iso(r.confirmed_at),
    effect: { id: gid('Effect', r.effect_id), kind: r.effect_kind, idempotencyKey: r.effect_key, externalRef: r.effect_ref },
    retraction: { id: gid('Retraction', r.retraction_id), reason: r.retraction_reason },
  };
}

interface RetractionSql { id: string; reason: string; created_at: Date; actor_id: string; actor_name: string; root_id: string }

async function retractionRow(tx: Tx, id: string): Promise<RetractionSql | undefined> {
  const r = await sql<RetractionSql>`SELECT t.id::text AS id, t.reason, t.created_at, t.actor_id::text AS actor_id, a.name AS actor_name,
      t.root_id::text AS root_id
    FROM retractions t JOIN agents a ON a.id = t.actor_id WHERE t.id = ${id}`.execute(tx);
  return r.rows[0];
}

async function retractionOut(tx: Tx, t: RetractionSql) {
  const root = (await beliefRows(tx, [t.root_id])).get(t.root_id)!;
  return {
    id: gid('Retraction', t.id), dbId: t.id, reason: t.reason, createdAt: iso(t.created_at)!,
    actor: { id: gid('Agent', t.actor_id), dbId: t.actor_id, name: t.actor_name }, root: beliefOut(root),
  };
}

const AFTER_RULE = 'must be an endCursor returned by a previous page';

/** Page size 1…500 (default 50), and an `after` that must be a cursor this connection issued (`check` throws otherwise). */
function pageArgs(first: number | undefined, after: string | undefined, check: (s: string) => unknown) {
  const n = first ?? 50;
  if (!Number.isInteger(n) || n < 1 || n > 500) throw badInput('first', 'must be an integer from 1 to 500');
  if (after !== undefined && after !== '') check(after);
  return { first: n, after: after || null };
}

export interface ReceiptArgs { retractionId?: string; beliefId?: string; first?: number; after?: string }

/**
 * A receipt: the retraction (named directly, through any belief it took down, or the newest when
 * neither is given), one page of its beliefs in cascade order, the effects it cancelled or reached
 * in flight, its reversals, and its totals — all from one snapshot.
 */
export async function getReceipt(tx: Tx, fleet: string, args: ReceiptArgs, opts: { mayReadActive: boolean }): Promise<ReceiptOut> {
  if (args.retractionId && args.beliefId) throw badInput('beliefId', 'give retractionId or beliefId, not both');
  const { first, after } = pageArgs(args.first, args.after, (s) => decodeDepthCursor('after', s, AFTER_RULE));
  let id: string;
  if (args.retractionId) {
    id = parseAnyId('retractionId', args.retractionId, 'Retraction');
  } else if (args.beliefId) {
    const beliefId = parseAnyId('beliefId', args.beliefId, 'Belief');
    const b = (await beliefRows(tx, [beliefId])).get(beliefId);
    // A reader without beliefs:read may not read an ACTIVE belief (src/agent/access.ts), not even its claim key or
    // that it exists: it hears what it would of an id that names no belief.
    if (!b?.retraction_id && !opts.mayReadActive) throw notFound('belief', beliefId, 'beliefId');
    if (!b) throw notFound('belief', beliefId, 'beliefId');
    if (!b.retraction_id) throw new DomainError('NOT_FOUND', `beliefId: belief ${beliefId} (${b.claim_key}) is ACTIVE; no retraction took it down`, 'beliefId');
    id = b.retraction_id;
  } else {
    const newest = await sql<{ id: string }>`SELECT id::text AS id FROM retractions WHERE fleet_id = ${fleet} ORDER BY retractions.id DESC LIMIT 1`.execute(tx);
    if (!newest.rows[0]) throw new DomainError('NOT_FOUND', `fleet ${fleet} has no retractions yet`);
    id = newest.rows[0].id;
  }
  const t = await retractionRow(tx, id);
  if (!t) throw notFound('retraction', id, args.retractionId ? 'retractionId' : undefined);

  const page = await retractedBeliefPage(tx, id, first, after);
  const rows = await beliefRows(tx, page.items.map((b) => b.id));
  const effects = await sql<EffectSql>`SELECT ${EFFECT_SELECT} FROM effects e LEFT JOIN reversals rv ON rv.effect_id = e.id
     WHERE e.cancelled_by = ${id} OR (e.reached_by = ${id} AND e.status = 'EXECUTING') ORDER BY e.id`.execute(tx);
  const reversals = await sql<ReversalSql>`${REVERSAL_FROM} WHERE r.retraction_id = ${id} ORDER BY r.id`.execute(tx);
  const totals = await totalsFor(tx, id);
  return {
    retraction: await retractionOut(tx, t),
    beliefs: {
      items: page.items.map((b) => ({ ...beliefOut(rows.get(b.id)!), depth: b.depth })),
      totalCount: page.totalCount, hasNextPage: page.hasNextPage, endCursor: page.endCursor,
    },
    cancelledEffects: effects.rows.filter((e) => e.cancelled_by === id).map(effectOut),
    reachedInFlight: effects.rows.filter((e) => e.status === 'EXECUTING').map(effectOut),
    reversals: reversals.rows.map(reversalOut),
    totals: {
      ...totals,
      exposure: monies(totals.exposure), owed: monies(totals.owed), unreachableAmount: monies(totals.unreachableAmount), settled: monies(totals.settled),
    },
  };
}

export interface ExplainArgs { beliefId?: string; claimKey?: string; maxDepth?: number }

/** Most beliefs listed in each direction before the walk stops and says `truncated`. */
export const EXPLAIN_NODE_CAP = 200;

/**
 * Explains a belief: its lineage up through justifications (which hold, which premises fell), its
 * dependents down, the effects resting on it or on them, and, when RETRACTED, the retraction that
 * took it down and why. Walks one level per statement, bounded by maxDepth and EXPLAIN_NODE_CAP.
 */
export async function explainBelief(tx: Tx, fleet: string, args: ExplainArgs): Promise<ExplainOut> {
  if (!!args.beliefId === !!args.claimKey) throw badInput('beliefId', 'give exactly one of beliefId or claimKey');
  const maxDepth = args.maxDepth ?? 6;
  let id: string;
  if (args.beliefId) {
    id = parseAnyId('beliefId', args.beliefId, 'Belief');
  } else {
    const key = v.claimKey('claimKey', args.claimKey);
    const r = await sql<{ id: string }>`SELECT id::text AS id FROM beliefs WHERE fleet_id = ${fleet} AND claim_key = ${key}
      ORDER BY (status = 'ACTIVE') DESC, id DESC LIMIT 1`.execute(tx);
    if (!r.rows[0]) throw new DomainError('NOT_FOUND', `claimKey: no belief on claim ${key}`, 'claimKey');
    id = r.rows[0].id;
  }
  const self = (await beliefRows(tx, [id])).get(id);
  if (!self) throw notFound('belief', id, args.beliefId ? 'beliefId' : 'claimKey');

  // Up: justifications of each level, their premises become the next level.
  const justifications: ExplainOut['lineage']['justifications'] = [];
  const upDepth = new Map<string, number>([[id, 0]]);
  let frontier = [id];
  let upTruncated = false;
  for (let depth = 0; frontier.length > 0; depth++) {
    const js = await sql<{ id: string; belief_id: string; premise_ids: string[]; fallen: string[] | null; holds: boolean }>`
      SELECT j.id::text AS id, j.belief_id::text AS belief_id,
             array_agg(p.premise_id::text ORDER BY p.premise_id) AS premise_ids,
             array_agg(p.premise_id::text ORDER BY p.premise_id) FILTER (WHERE pb.status <> 'ACTIVE') AS fallen,
             bool_and(pb.status = 'ACTIVE') AS holds
        FROM justifications j JOIN justification_premises p ON p.justification_id = j.id JOIN beliefs pb ON pb.id = p.premise_id
       WHERE j.belief_id = ANY(${frontier}::bigint[]) GROUP BY j.fleet_id, j.id ORDER BY j.belief_id, j.id`.execute(tx);
    const next: string[] = [];
    for (const j of js.rows) {
      justifications.push({
        id: gid('Justification', j.id), beliefId: gid('Belief', j.belief_id), holds: j.holds,
        premiseIds: j.premise_ids.map((p) => gid('Belief', p)), fallenPremiseIds: (j.fallen ?? []).map((p) => gid('Belief', p)),
      });
      for (const p of j.premise_ids) {
        if (upDepth.has(p)) continue;
        if (depth + 1 > maxDepth || upDepth.size > EXPLAIN_NODE_CAP) {
          upTruncated = true;
          continue;
        }
        upDepth.set(p, depth + 1);
        next.push(p);
      }
    }
    frontier = next;
  }

  // Down: beliefs citing the current level as a premise.
  const downDepth = new Map<string, number>();
  const via = new Map<string, string[]>();
  frontier = [id];
  let downTruncated = false;
  for (let depth = 1; frontier.length > 0; depth++) {
    const deps = await sql<{ belief_id: string; premise_id: string }>`
      SELECT DISTINCT j.belief_id::text AS belief_id, p.premise_id::text AS premise_id
        FROM justification_premises p JOIN justifications j ON j.id = p.justification_id
       WHERE p.premise_id = ANY(${frontier}::bigint[]) ORDER BY 1, 2`.execute(tx);
    const next: string[] = [];
    for (const d of deps.rows) {
      if (d.belief_id === id) continue;
      if (!downDepth.has(d.belief_id)) {
        if (depth > maxDepth || downDepth.size >= EXPLAIN_NODE_CAP) {
          downTruncated = true;
          continue;
        }
        downDepth.set(d.belief_id, depth);
        next.push(d.belief_id);
      }
      const list = via.get(d.belief_id) ?? [];
      if (!list.includes(d.premise_id)) list.push(d.premise_id);
      via.set(d.belief_id, list);
    }
    frontier = next;
  }

  const rows = await beliefRows(tx, [...upDepth.keys(), ...downDepth.keys()]);
  const byDepth = (m: Map<string, number>) => [...m.entries()].filter(([b]) => b !== id).sort((a, b) => a[1] - b[1] || Number(a[0]) - Number(b[0]));

  const reach = [id, ...downDepth.keys()];
  const effects = await sql<EffectSql & { rests_on: string[] }>`
    SELECT ${EFFECT_SELECT}, s.rests_on FROM (
      SELECT effect_id, array_agg(belief_id::text ORDER BY belief_id) AS rests_on FROM effect_supports
       WHERE belief_id = ANY(${reach}::bigint[]) GROUP BY effect_id ORDER BY effect_id LIMIT ${EXPLAIN_NODE_CAP}) s
    JOIN effects e ON e.id = s.effect_id LEFT JOIN reversals rv ON rv.effect_id = e.id ORDER BY e.id`.execute(tx);

  let retraction: ExplainOut['retraction'] = null;
  if (self.retraction_id) {
    const t = (await retractionRow(tx, self.retraction_id))!;
    const out = await retractionOut(tx, t);
    const depth = self.retraction_depth ?? 0;
    const why = depth === 0
      ? `retracted directly by ${t.actor_name}: ${t.reason}`
      : `fell at depth ${depth} of the cascade from ${out.root.claimKey} (retracted by ${t.actor_name}: ${t.reason}); ` +
        `none of its justifications still held once a premise fell`;
    retraction = { ...out, depth, why };
  }

  return {
    belief: beliefOut(self),
    lineage: { justifications, beliefs: byDepth(upDepth).map(([b, d]) => ({ ...beliefOut(rows.get(b)!), depth: d })), truncated: upTruncated },
    dependents: {
      beliefs: byDepth(downDepth).map(([b, d]) => ({ ...beliefOut(rows.get(b)!), depth: d, via: (via.get(b) ?? []).map((p) => gid('Belief', p)) })),
      truncated: downTruncated,
    },
    effects: effects.rows.map((e) => ({ ...effectOut(e), restsOn: e.rests_on.map((b) => gid('Belief', b)), direct: e.rests_on.includes(id) })),
    retraction,
  };
}

export interface OwedArgs { statuses?: ReadonlyArray<'OWED' | 'DISPATCHED' | 'FAILED'>; first?: number; after?: string }

const encodeOwedCursor = (id: string) => encodeCursor('o1', [id]);
const decodeOwedCursor = (s: string) => decodeCursor('after', s, 'o1', ['id'], AFTER_RULE)[0]!;

/**
 * Reversals owed and not yet settled (OWED, DISPATCHED, FAILED by default), oldest first and
 * keyset-paged, with the count and per-currency sum over every matching reversal.
 */
export async function listOwedReversals(tx: Tx, fleet: string, args: OwedArgs): Promise<OwedOut> {
  const { first, after } = pageArgs(args.first, args.after, decodeOwedCursor);
  const statuses = [...new Set(args.statuses ?? ['OWED', 'DISPATCHED', 'FAILED'])];
  const afterId = after ? decodeOwedCursor(after) : null;
  const rows = await sql<ReversalSql>`${REVERSAL_FROM}
     WHERE r.fleet_id = ${fleet} AND r.status = ANY(${statuses}::text[]) ${afterId ? sql`AND r.id > ${afterId}::bigint` : sql``}
     ORDER BY r.id LIMIT ${first + 1}`.execute(tx);
  const agg = await sql<{ n: number; sums: Array<{ currency: string; amount: string }> | null }>`
    SELECT (SELECT count(*)::int FROM reversals WHERE fleet_id = ${fleet} AND status = ANY(${statuses}::text[])) AS n,
           (SELECT json_agg(s ORDER BY s.currency) FROM (
              SELECT currency, sum(amount_minor)::text AS amount FROM reversals
               WHERE fleet_id = ${fleet} AND status = ANY(${statuses}::text[]) AND currency IS NOT NULL GROUP BY currency) s) AS sums`.execute(tx);
  const items = rows.rows.slice(0, first);
  const last = items[items.length - 1];
  return {
    items: items.map(reversalOut),
    totalCount: agg.rows[0]!.n,
    hasNextPage: rows.rows.length > first,
    endCursor: last ? encodeOwedCursor(last.id) : null,
    owed: (agg.rows[0]!.sums ?? []).map((s) => money(s.amount, s.currency)),
  };
}

export interface SearchArgs { text: string; k?: number; includeRetracted?: boolean; claimKeyPrefix?: string }

/**
 * READ over belief embeddings (src/belief/nearest.ts: exact within a claim-key prefix of up to
 * EXACT_PREFIX_MAX beliefs, else HNSW with pgvector's iterative scan so the filters still yield k
 * hits), ACTIVE only unless includeRetracted (then exact over the fleet's rows); `vector` is the
 * query text's embedding. Returns the
 * hits nearest first and the snapshot of the same transaction as the read point.
 */
export async function searchBeliefs(tx: Tx, fleet: string, args: SearchArgs & { vector: number[] }): Promise<SearchOut> {
  const k = args.k ?? 10;
  const prefix = v.claimKeyPrefix('claimKeyPrefix', args.claimKeyPrefix);
  const snap = await sql<{ s: string }>`SELECT pg_current_snapshot()::text AS s`.execute(tx);
  const near = await nearestBeliefs(tx, fleet, { vector: `[${args.vector.join(',')}]`, k, includeRetracted: !!args.includeRetracted, prefix });
  // Authors are joined to the k hits only.
  const rows = await sql<BeliefSql & { distance: number }>`
    WITH h AS MATERIALIZED (${near.query})
    SELECT ${BELIEF_SELECT}, h.distance FROM h
      JOIN beliefs b ON b.id = h.id
      JOIN agents a ON a.id = b.author_id
     ORDER BY h.distance, h.id`.execute(tx);
  return {
    snapshot: encodeReadPoint({ fleet, snapshot: snap.rows[0]!.s }),
    hits: rows.rows.map((r) => ({ belief: beliefOut(r), score: 1 - Number(r.distance) })),
  };
}
