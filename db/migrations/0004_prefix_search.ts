import { type Kysely, sql } from 'kysely';

/**
 * Exact nearest-neighbour search inside a claim-key prefix (src/belief/nearest.ts).
 *
 * Why: the HNSW index cannot serve a prefix filter well. pgvector's iterative scan walks the graph
 * from the query outward and keeps the rows that pass the filter; when the prefix's rows sit in
 * other regions of the space than the query (a customer's beliefs about many topics, a topic
 * spread over many customers), the first k rows that pass are not the k nearest. Exact ranking of
 * the prefix's rows fixes recall but, read from the heap, costs a TOAST fetch of each 2 KB vector.
 *
 * What:
 *  - `beliefs.embedding_half`: the embedding as halfvec (1 KB), computed by PostgreSQL from
 *    `embedding` (a stored generated column; not recomputed when status changes).
 *  - `beliefs_prefix_embedding`: a btree over (fleet_id, claim_key COLLATE "C") of ACTIVE beliefs
 *    carrying id and embedding_half, so a prefix's rows and their vectors come from one
 *    contiguous range of the index (an index-only scan, ≈ 7 rows per page), with no heap or TOAST
 *    access. The search re-ranks the few best by the full-precision `embedding`. The "C"
 *    collation makes the prefix a plain range (claim_key COLLATE "C" >= p AND < p's successor)
 *    that no other index of beliefs serves, so the planner does not pick a heap scan whose
 *    TOAST reads it cannot cost.
 *  - `toast_tuple_target = 1024`, so embedding_half is stored out of line like embedding and the
 *    heap row stays small: a retraction's UPDATE copies a TOAST pointer, not 1 KB.
 *
 * Cost: 1 KB more TOAST and 1 KB of index per ACTIVE belief; a btree insertion per assert.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE beliefs SET (toast_tuple_target = 1024)`.execute(db);
  await sql`ALTER TABLE beliefs ADD COLUMN embedding_half halfvec(512) GENERATED ALWAYS AS (embedding::halfvec(512)) STORED`.execute(db);
  await sql`CREATE INDEX beliefs_prefix_embedding ON beliefs (fleet_id, claim_key COLLATE "C") INCLUDE (id, embedding_half) WHERE status = 'ACTIVE'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS beliefs_prefix_embedding`.execute(db);
  await sql`ALTER TABLE beliefs DROP COLUMN IF EXISTS embedding_half`.execute(db);
  await sql`ALTER TABLE beliefs RESET (toast_tuple_target)`.execute(db);
}
