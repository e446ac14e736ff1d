import { type Kysely, sql } from 'kysely';

/**
 * The two index searches of src/belief/nearest.ts as functions, each one statement with its planner
 * settings scoped to the call.
 *
 * Why: planner settings set for a transaction cost a round trip each (and another to set them
 * back), a large part of a short search; and a search left to the planner's choice of index goes
 * wrong where the planner cannot cost what it reads:
 *  - exact prefix: at 100k vacuumed beliefs the planner read the prefix from
 *    beliefs_prefix_embedding, but at 5k freshly loaded ones (visibility map unset) through
 *    beliefs_claim or beliefs_one_active_per_claim, fetching each row's embedding_half from TOAST,
 *    which the planner does not cost;
 *  - HNSW: on PGlite at 20k beliefs with ef_search 100, and on both engines at 5k with ef_search
 *    1000, the planner ranked every ACTIVE row by a sequential scan and a sort, from pgvector's
 *    cost estimate of the index scan.
 *
 * A function's SET clause holds for the call only and is restored on exit, also on error; a
 * set_config(…, true) inside it of a parameter in its SET clause is restored as well. Sequential
 * and bitmap scans are off in both, and JIT with them (a disabled path's cost would trigger it).
 * Each query is planned at each call with its values known (EXECUTE … USING), as a client's query
 * would be. SECURITY INVOKER: row-level security applies to the caller as to any query of its own.
 * test/belief/nearest.test.ts checks, from the statistics counters, which relations each search read.
 */
export async function up(db: Kysely<any>): Promise<void> {
  /**
   * `beliefs_prefix_nearest(fleet, prefix, prefix_end, query, k, candidates)`: the k ACTIVE
   * beliefs of the fleet whose claim key starts with `prefix`, nearest to `query` by the
   * full-precision embedding, ties by id. The `candidates` nearest by embedding_half come from an
   * index-only scan of beliefs_prefix_embedding over the "C"-order range [prefix, prefix_end)
   * (exactly the keys starting with prefix; prefix_end NULL means no upper bound, and then the
   * prefix test is applied as well), and are re-ranked. With page costs at 0 the planner compares
   * index paths by the rows they read, so the covering index's range (the prefix's rows) beats any
   * path over the fleet's rows, however fat its pages or unset the visibility map; the C range is
   * served by no other index.
   */
  await sql`
    CREATE FUNCTION beliefs_prefix_nearest(p_fleet text, p_prefix text, p_end text, p_query vector, p_k int, p_candidates int)
      RETURNS TABLE (id bigint, distance float8)
      LANGUAGE plpgsql STABLE ROWS 10
      SET enable_seqscan = off
      SET enable_bitmapscan = off
      SET random_page_cost = 0
      SET seq_page_cost = 0
      SET jit = off
    AS $fn$
    BEGIN
      RETURN QUERY EXECUTE
        'WITH c AS MATERIALIZED (
           SELECT b.id FROM beliefs b
            WHERE b.fleet_id = $1 AND b.status = ''ACTIVE'' AND b.claim_key COLLATE "C" >= $2'
        || CASE WHEN p_end IS NULL THEN ' AND b.claim_key ^@ $2' ELSE ' AND b.claim_key COLLATE "C" < $3' END || '
            ORDER BY b.embedding_half <=> $4::halfvec(512), b.id
            LIMIT $6)
         SELECT b.id, b.embedding <=> $4 AS distance
           FROM beliefs b
          WHERE b.id IN (SELECT c.id FROM c)
          ORDER BY 2, 1
          LIMIT $5'
        USING p_fleet, p_prefix, p_end, p_query, p_k, p_candidates;
    END
    $fn$`.execute(db);

  /**
   * `beliefs_hnsw_nearest(fleet, prefix, query, k, ef)`: the k ACTIVE beliefs of the fleet (whose
   * claim key starts with `prefix`, unless it is NULL) nearest to `query`, through the HNSW index
   * beliefs_embedding with hnsw.ef_search = ef and pgvector's relaxed-order iterative scan, so the
   * filters still yield k rows; re-sorted by distance, ties by id. With a prefix, ef rows are
   * fetched before the re-sort. Sorting is off as well: only the index yields rows in distance
   * order, so every other plan carries a disabled sort more than it (the outer re-sort, over at
   * most ef rows, is in every plan alike).
   */
  await sql`
    CREATE FUNCTION beliefs_hnsw_nearest(p_fleet text, p_prefix text, p_query vector, p_k int, p_ef int)
      RETURNS TABLE (id bigint, distance float8)
      LANGUAGE plpgsql STABLE ROWS 10
      SET enable_seqscan = off
      SET enable_bitmapscan = off
      SET enable_sort = off
      SET jit = off
      SET hnsw.ef_search = 40
      SET hnsw.iterative_scan = relaxed_order
    AS $fn$
    BEGIN
      PERFORM set_config('hnsw.ef_search', p_ef::text, true);
      RETURN QUERY EXECUTE
        'SELECT s.id, s.distance FROM (
           SELECT b.id, b.embedding <=> $2 AS distance
             FROM beliefs b
            WHERE b.fleet_id = $1 AND b.status = ''ACTIVE'''
        || CASE WHEN p_prefix IS NULL THEN '' ELSE ' AND b.claim_key ^@ $3' END || '
            ORDER BY b.embedding <=> $2
            LIMIT $4) s
          ORDER BY s.distance, s.id
          LIMIT $5'
        USING p_fleet, p_query, p_prefix, CASE WHEN p_prefix IS NULL THEN p_k ELSE p_ef END, p_k;
    END
    $fn$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS beliefs_hnsw_nearest(text, text, vector, int, int)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS beliefs_prefix_nearest(text, text, text, vector, int, int)`.execute(db);
}
