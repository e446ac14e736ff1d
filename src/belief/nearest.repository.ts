import { type RawBuilder, sql } from 'kysely';
import { fleetNode } from '../store/fleet-node';
import type { Db } from '../store/tx';
import { BELIEF_COLUMNS, type BeliefRow } from './belief.repository';

/**
 * The SQL of READ: nearest beliefs by embedding, and the snapshot a READ is taken at. Every
 * statement names its fleet; row-level security stays as the second wall.
 */

/** HNSW candidate list size (hnsw.ef_search); the recall/latency trade-off is measured by the READ benchmark. */
export const EF_SEARCH = Number(process.env.RETRACT_EF_SEARCH ?? 100);

/**
 * A claim-key prefix the planner estimates to hold at most this many ACTIVE beliefs of the fleet
 * is ranked exactly; a larger one goes through the HNSW index. The exact ranking reads the
 * prefix's rows from beliefs_prefix_embedding, so it costs what the prefix holds (the READ
 * benchmark measures it at 1 % and 10 % of 100k beliefs). The estimate (table statistics, no
 * scan) only chooses the plan: either plan returns k hits.
 */
export const EXACT_PREFIX_MAX = 20_000;

/** Candidates taken by halfvec distance, per hit asked for, before re-ranking by the full vector. */
export const RERANK_FACTOR = 4;

/**
 * The smallest string above every string that starts with `p` in "C" (code point) order, or null
 * when there is none (p ends in U+10FFFF).
 */
function prefixEnd(p: string): string | null {
  const cps = [...p];
  const last = cps.pop()!.codePointAt(0)!;
  if (last === 0x10ffff) return null;
  return cps.join('') + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
}

/**
 * The k ACTIVE beliefs of the prefix nearest by the full-precision embedding (ties by id), as
 * (id, distance): the exact path in one statement. beliefs_prefix_nearest (db/migrations/
 * 0005_nearest.ts) reads the RERANK_FACTOR·k nearest by their halfvec copy with an index-only
 * scan of beliefs_prefix_embedding over the prefix's "C"-order range, with planner settings that
 * hold for that call only, and re-ranks them.
 */
function prefixNearest(fleet: string, prefix: string, vector: string, k: number): Ranked {
  return fromJson(
    sql`SELECT beliefs_prefix_nearest_json(${fleet}, ${prefix}, ${prefixEnd(prefix)}, ${vector}::vector, ${k}, ${RERANK_FACTOR * k}) AS r`,
  );
}

type Ranked = (db: Db) => Promise<Array<{ id: string; distance: number }>>;

/**
 * The functions' ranking as one jsonb array of [id, distance], from a statement that is the call alone: the one
 * shape Citus delegates to the worker holding the fleet (db/migrations/0010_citus.ts), so that the function's own
 * planner and HNSW settings apply where its query runs. Elsewhere the same function runs on the one server.
 */
function fromJson(call: RawBuilder<{ r: Array<[string, number]> }>): Ranked {
  return async (db) => (await call.execute(db)).rows[0]!.r.map(([id, distance]) => ({ id, distance }));
}

/** The estimated row count at the top of an EXPLAIN (FORMAT JSON) (a string on some drivers). */
function planRows(plan: unknown): number {
  const p = (typeof plan === 'string' ? JSON.parse(plan) : plan) as Array<{ Plan: { 'Plan Rows': number } }>;
  return p[0]!.Plan['Plan Rows'];
}

export interface NearestArgs {
  /** The query embedding as a pgvector literal, '[x,y,…]'. */
  vector: string;
  k: number;
  includeRetracted: boolean;
  /** Only claims whose key starts with this (literally: no wildcards), or null. */
  prefix: string | null;
  /** hnsw.ef_search for the index scan (default EF_SEARCH, at least k). */
  ef?: number;
}

export interface Nearest {
  /** Runs the search in the transaction: the k nearest (id, distance), nearest first, ties by id. */
  run: Ranked;
  /**
   * How it ranks: exactly over a prefix's ACTIVE rows, through the HNSW index, or (with
   * retracted beliefs, which the index does not hold) exactly over the fleet's rows.
   */
  plan: 'exact prefix' | 'hnsw' | 'exact';
}

/**
 * The one nearest-neighbour query over belief embeddings (cosine distance), for the GraphQL and
 * MCP searches and the READ benchmark, the same on both engines. It returns the query to run in
 * the same transaction (row-level security scopes it to the fleet the transaction is in; `fleet`
 * repeats it so the indexes apply); it leaves the transaction's settings as they were.
 *
 * - With a prefix, ACTIVE beliefs only, and a prefix estimated at most EXACT_PREFIX_MAX beliefs:
 *   exact (prefixNearest). The prefix's rows are ranked by their halfvec copy (an index-only scan
 *   of beliefs_prefix_embedding), and the best RERANK_FACTOR·k re-ranked by the full-precision
 *   embedding, in one statement after the estimate. The HNSW index is not used: its filtered
 *   scan returns the first k rows that pass, which are not the nearest when the prefix's rows lie
 *   away from the query (FINDINGS §6, read).
 * - ACTIVE beliefs otherwise: HNSW (beliefs_hnsw_nearest) with pgvector's iterative scan
 *   (relaxed order) so the filters still yield k rows, re-sorted by distance. With a (large)
 *   prefix the scan over-fetches ef rows before the re-sort. The function keeps the planner on
 *   the index, which it left for a sequential scan and a sort at some table sizes and ef values.
 * - With retracted beliefs (includeRetracted) the partial HNSW index does not apply: the fleet's
 *   rows (of the prefix, if any) are ranked exactly.
 */
export async function nearestBeliefs(tx: Db, fleet: string, a: NearestArgs): Promise<Nearest> {
  if (a.includeRetracted) {
    // starts_with (^@) rather than LIKE: it is leakproof, so under row-level security the planner
    // may still turn it into an index range; LIKE is not, and would be a filter over the fleet.
    const inPrefix = a.prefix === null ? sql`` : sql`AND claim_key ^@ ${a.prefix}`;
    const query = sql<{ id: string; distance: number }>`
        SELECT id::text AS id, embedding <=> ${a.vector}::vector AS distance FROM beliefs
         WHERE fleet_id = ${fleet} ${inPrefix}
         ORDER BY distance, beliefs.id
         LIMIT ${a.k}`;
    return { plan: 'exact', run: async (db) => (await query.execute(db)).rows };
  }
  if (a.prefix !== null) {
    const est = await sql<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>`
      EXPLAIN (FORMAT JSON) SELECT 1 FROM beliefs WHERE fleet_id = ${fleet} AND status = 'ACTIVE' AND claim_key ^@ ${a.prefix}`.execute(
      tx,
    );
    if (planRows(est.rows[0]!['QUERY PLAN']) <= EXACT_PREFIX_MAX)
      return { plan: 'exact prefix', run: prefixNearest(fleet, a.prefix, a.vector, a.k) };
  }
  const ef = Math.max(a.ef ?? EF_SEARCH, a.k);
  return {
    plan: 'hnsw',
    run: fromJson(
      sql`SELECT beliefs_hnsw_nearest_json(${fleet}, ${a.prefix}, ${a.vector}::vector, ${a.k}, ${ef}) AS r`,
    ),
  };
}

/** One nearest neighbour: the belief and its cosine similarity (higher is nearer). */
export interface Hit {
  belief: BeliefRow;
  score: number;
}

/**
 * The search inside an open fleet transaction: the k nearest beliefs with their rows, nearest
 * first (ties by id), and which plan ranked them. GraphQL, MCP and the READ benchmark run it.
 */
export async function searchInTx(
  tx: Db,
  fleet: string,
  a: NearestArgs,
): Promise<{ hits: Hit[]; plan: Nearest['plan'] }> {
  const near = await nearestBeliefs(tx, fleet, a);
  const ranked = await near.run(tx);
  const rows = await sql<BeliefRow>`
    SELECT ${sql.join(BELIEF_COLUMNS.map((c) => sql.ref(`b.${c}`)))}
      FROM beliefs b WHERE b.fleet_id = ${fleet} AND b.id = ANY(${ranked.map((h) => h.id)}::bigint[])`.execute(tx);
  const byId = new Map(rows.rows.map((b) => [String(b.id), b]));
  return {
    hits: ranked.map((h) => ({ belief: byId.get(String(h.id))!, score: 1 - Number(h.distance) })),
    plan: near.plan,
  };
}

/** The transaction's snapshot on the fleet's node (pg_snapshot text, xmin:xmax:xip): where a READ was taken. */
export async function currentSnapshot(db: Db, fleet: string): Promise<string> {
  return (await sql<{ s: string }>`SELECT pg_current_snapshot()::text AS s FROM ${fleetNode(fleet)}`.execute(db))
    .rows[0]!.s;
}
