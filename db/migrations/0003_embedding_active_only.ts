import { type Kysely, sql } from 'kysely';

/**
 * The HNSW index over belief embeddings covers ACTIVE beliefs only.
 *
 * Why: a retraction UPDATEs status, retraction_id and retraction_depth, all of them indexed, so the
 * update is never HOT and PostgreSQL inserts a new entry for the new row version into EVERY index
 * of `beliefs` — including the HNSW graph, where one insertion costs a graph search, so a cascade
 * would pay a graph search per retracted belief. A partial index is not maintained for a row
 * version outside its predicate, so a retracted belief costs no HNSW work.
 *
 * What it changes for READ: a search for ACTIVE beliefs (`AND status = 'ACTIVE'`, the default)
 * uses the index, over a smaller graph. A search with includeRetracted cannot use it and
 * ranks the fleet's beliefs exactly (a scan), which is correct and costs what the fleet holds.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS beliefs_embedding`.execute(db);
  await sql`CREATE INDEX beliefs_embedding ON beliefs USING hnsw (embedding vector_cosine_ops) WHERE status = 'ACTIVE'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX IF EXISTS beliefs_embedding`.execute(db);
  await sql`CREATE INDEX beliefs_embedding ON beliefs USING hnsw (embedding vector_cosine_ops)`.execute(db);
}
