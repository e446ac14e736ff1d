import { type Kysely, sql } from 'kysely';
import type { DB } from './schema';

/** What one maintenance pass did to one table. */
export interface MaintenanceStep {
  table: string;
  /** VACUUM (ANALYZE), or ANALYZE alone. */
  action: 'vacuum analyze' | 'analyze';
}

/**
 * The tables PostgreSQL's autovacuum would process now, by its own rules and settings
 * (autovacuum_vacuum_*, autovacuum_vacuum_insert_*, autovacuum_analyze_*: threshold + scale factor
 * × the table's estimated rows), from the statistics counters.
 */
const DUE = sql<{ table: string; vacuum: boolean }>`
  SELECT table_name AS "table", due_vacuum AS vacuum FROM (
    SELECT c.oid::regclass::text AS table_name,
           s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
                          + current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0)
        OR s.n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8
                          + current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * greatest(c.reltuples, 0) AS due_vacuum,
           s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                          + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0) AS due_analyze
      FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid) t
   WHERE due_vacuum OR due_analyze
   ORDER BY table_name`;

/**
 * One autovacuum pass, for an engine that runs none of its own (PGlite is a single backend with no
 * autovacuum launcher: its statistics never refresh and dead row versions are never reclaimed).
 * VACUUMs (with ANALYZE) the tables autovacuum would vacuum, ANALYZEs those it would only analyze.
 * Runs outside any transaction, as the store's owner; on PGlite it waits for the one connection,
 * so it runs between transactions, never inside one.
 */
export async function maintain(db: Kysely<DB>): Promise<MaintenanceStep[]> {
  // This backend's own counters reach the shared statistics at most once a second; on PGlite it
  // is the only backend, so flush them first.
  await sql`SELECT pg_stat_force_next_flush()`.execute(db);
  const due = (await DUE.execute(db)).rows;
  const done: MaintenanceStep[] = [];
  for (const t of due) {
    // The name comes from the catalog as regclass text: already quoted where it needs to be.
    await sql.raw(`${t.vacuum ? 'VACUUM (ANALYZE)' : 'ANALYZE'} ${t.table}`).execute(db);
    done.push({ table: t.table, action: t.vacuum ? 'vacuum analyze' : 'analyze' });
  }
  return done;
}
