import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../store/tx';

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
 * The `n` ACTIVE beliefs of the prefix nearest by their halfvec copy (ties by id): the exact
 * path's candidates. The range in "C" order is what beliefs_prefix_embedding (claim_key COLLATE
 * "C") serves and no other index can, so the planner has one index to read the prefix from.
 */
export function prefixCandidates(fleet: string, prefix: string, vector: string, n: number): RawBuilder<{ id: string }> {
  const end = prefixEnd(prefix);
  return sql`
    SELECT id::text FROM beliefs
     WHERE fleet_id = ${fleet} AND status = 'ACTIVE' AND claim_key ^@ ${prefix}
       AND claim_key COLLATE "C" >= ${prefix} ${end === null ? sql`` : sql`AND claim_key COLLATE "C" < ${end}`}
     ORDER BY embedding_half <=> ${vector}::halfvec(512), id
     LIMIT ${n}`;
}

/**
 * Runs `fn` with sequential and bitmap scans switched off, then restores the session's values.
 * Only an index-only scan of beliefs_prefix_embedding reads a prefix's vectors without TOAST; the
 * planner does not cost TOAST, so a scan over the heap can look cheaper for a large prefix (and
 * was about 4× slower in the READ benchmark).
 */
export async function indexOnly<T>(tx: Db, fn: () => Promise<T>): Promise<T> {
  await sql`SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)`.execute(tx);
  const r = await fn();
  await sql`SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name IN ('enable_seqscan', 'enable_bitmapscan')`.execute(tx);
  return r;
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
  /** A SELECT of (id bigint, distance float8): the k nearest, nearest first, ties by id. */
  query: RawBuilder<{ id: string; distance: number }>;
  /** How it ranks: exactly over a prefix's rows, or through the HNSW index. */
  plan: 'exact prefix' | 'hnsw';
}

/**
 * The one nearest-neighbour query over belief embeddings (cosine distance), for the GraphQL and
 * MCP searches and the READ benchmark, the same on both engines. It sets the transaction's HNSW
 * settings and returns the query to run in the same transaction (row-level security scopes it to
 * the fleet the transaction is in; `fleet` repeats it so the indexes apply).
 *
 * - With a prefix, ACTIVE beliefs only, and a prefix estimated at most EXACT_PREFIX_MAX beliefs: exact.
 *   The prefix's rows are ranked by their halfvec copy (beliefs_prefix_embedding, an index-only
 *   scan), and the best RERANK_FACTOR·k re-ranked by the full-precision embedding; the returned
 *   query is the re-ranking (so an EXPLAIN of it shows the primary-key lookup only). The HNSW
 *   index is not used: its filtered scan returns the first k rows that pass, which are not the
 *   nearest when the prefix's rows lie away from the query (recall ≈ 0.5 measured at 10 %).
 * - Otherwise: HNSW with pgvector's iterative scan (relaxed order) so the filters still yield k
 *   rows, re-sorted by distance. With a (large) prefix the scan over-fetches ef rows before the
 *   re-sort. Without ACTIVE (includeRetracted) the partial HNSW index does not apply and the
 *   fleet's rows are ranked exactly.
 */
export async function nearestBeliefs(tx: Db, fleet: string, a: NearestArgs): Promise<Nearest> {
  const ef = Math.max(a.ef ?? EF_SEARCH, a.k);
  const active = a.includeRetracted ? sql`` : sql`AND status = 'ACTIVE'`;
  // starts_with (^@) rather than LIKE: it is leakproof, so under row-level security the planner
  // may still turn it into an index range; LIKE is not, and would be a filter over the fleet.
  const inPrefix = a.prefix === null ? sql`` : sql`AND claim_key ^@ ${a.prefix}`;
  if (a.prefix !== null && !a.includeRetracted) {
    const est = await sql<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>`
      EXPLAIN (FORMAT JSON) SELECT 1 FROM beliefs WHERE fleet_id = ${fleet} AND status = 'ACTIVE' AND claim_key ^@ ${a.prefix}`.execute(tx);
    if (planRows(est.rows[0]!['QUERY PLAN']) <= EXACT_PREFIX_MAX) {
      const cands = await indexOnly(tx, () => prefixCandidates(fleet, a.prefix!, a.vector, RERANK_FACTOR * a.k).execute(tx));
      return {
        plan: 'exact prefix',
        query: sql`
          SELECT id, embedding <=> ${a.vector}::vector AS distance FROM beliefs
           WHERE id = ANY(${cands.rows.map((r) => r.id)}::bigint[])
           ORDER BY distance, id
           LIMIT ${a.k}`,
      };
    }
  }
  await sql`SELECT set_config('hnsw.ef_search', ${String(ef)}, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`.execute(tx);
  return {
    plan: 'hnsw',
    query: sql`
      SELECT id, distance FROM (
        SELECT id, embedding <=> ${a.vector}::vector AS distance
          FROM beliefs
         WHERE fleet_id = ${fleet} ${active} ${inPrefix}
         ORDER BY embedding <=> ${a.vector}::vector
         LIMIT ${a.prefix === null ? a.k : ef}) s
       ORDER BY distance, id
       LIMIT ${a.k}`,
  };
}
