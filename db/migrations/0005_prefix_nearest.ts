import { type Kysely, sql } from 'kysely';

/**
 * The exact prefix search (src/belief/nearest.ts) as one statement.
 *
 * Why: the exact path used to take five round trips inside the search's transaction (switch seq
 * and bitmap scans off, take the candidates, switch them back, then re-rank and hydrate); on a
 * 2-core machine those round trips were a third of a 10k-row prefix search. And it relied on the
 * planner to pick beliefs_prefix_embedding, which it did at 100k vacuumed beliefs but not at 5k
 * freshly loaded ones (visibility map unset): there it read the prefix through beliefs_claim or
 * beliefs_one_active_per_claim and fetched each row's embedding_half from TOAST, which the planner
 * does not cost.
 *
 * What: `beliefs_prefix_nearest(fleet, prefix, prefix_end, query, k, candidates)` returns the k
 * ACTIVE beliefs of the fleet whose claim key starts with `prefix`, nearest to `query` by the
 * full-precision embedding, ties by id. The `candidates` nearest by embedding_half come from an
 * index-only scan of beliefs_prefix_embedding over the "C"-order range [prefix, prefix_end)
 * (exactly the keys starting with prefix; prefix_end NULL means no upper bound, and then the
 * prefix test is applied as well), and are re-ranked.
 *
 * The planner settings of the function's SET clause hold for the call only and are restored on
 * exit, also on error. With page costs at 0 the planner compares index paths by the rows they
 * read, so the covering index's range (the prefix's rows) beats any path over the fleet's rows,
 * however fat its pages or unset the visibility map; the C range is served by no other index.
 * Sequential and bitmap scans are off, and JIT with them (a disabled path's cost would trigger
 * it). test/core/nearest.test.ts checks from the statistics counters which relations a search
 * read. The query is planned at each call with its values known (EXECUTE … USING). SECURITY
 * INVOKER: row-level security applies to the caller as to any query of its own.
 */
export async function up(db: Kysely<any>): Promise<void> {
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
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS beliefs_prefix_nearest(text, text, text, vector, int, int)`.execute(db);
}
