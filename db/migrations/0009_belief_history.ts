import { type Kysely, sql } from 'kysely';

/**
 * Belief status as validity intervals, so any past instant can be read back (src/belief/belief-history.repository.ts).
 *
 * Why this shape: a belief's current interval is already on its row — ACTIVE since it was asserted (`created_at`) or
 * last reinstated, RETRACTED since `retracted_at` by `retraction_id` (whose `actor_id` is who changed it). Only a
 * reinstatement ends a RETRACTED interval and clears those columns, so only a reinstatement has anything to keep:
 * one row per belief it brings back, the closed interval [retracted_at, reinstated_at) with the retraction that
 * opened it and the reinstatement (and agent) that closed it. The ACTIVE intervals are the gaps between them. So
 * assert, retraction cascade and adjudication write nothing more than before (the cascade's UPDATE is unchanged,
 * issue 16's ≤ 2× bound is untouched), and a reinstatement writes one row per reinstated belief.
 *
 * One index, the primary key (fleet_id, belief_id, retracted_at): what an as-of read probes per belief. A
 * reinstatement pays one row and one btree entry per belief it brings back; reading a retraction's reinstated
 * blast radius (Retraction.before) scans the fleet's history rows, which only reinstatements write.
 *
 * `reinstatement_id` names the reinstatements track's row (migration 0008 on its branch); its foreign key, like
 * the composite ones to beliefs and retractions, is added once both tracks share a schema.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  await ddl(`CREATE TABLE belief_status_history (
    fleet_id text NOT NULL REFERENCES fleets(id),
    belief_id bigint NOT NULL,
    retraction_id bigint NOT NULL,
    retraction_depth integer NOT NULL,
    retracted_at timestamptz NOT NULL,
    reinstatement_id bigint NOT NULL,
    reinstated_by bigint NOT NULL,
    reinstated_at timestamptz NOT NULL,
    PRIMARY KEY (fleet_id, belief_id, retracted_at),
    CHECK (retracted_at <= reinstated_at)
  )`);
  await ddl(`ALTER TABLE belief_status_history ENABLE ROW LEVEL SECURITY`);
  await ddl(`ALTER TABLE belief_status_history FORCE ROW LEVEL SECURITY`);
  await ddl(`CREATE POLICY belief_status_history_fleet ON belief_status_history USING (fleet_id = current_setting('retract.fleet', true)) WITH CHECK (fleet_id = current_setting('retract.fleet', true))`);
  await ddl(`GRANT SELECT, INSERT ON belief_status_history TO retract_app`);
  await ddl(`GRANT SELECT ON belief_status_history TO retract_reader`);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE IF EXISTS belief_status_history`.execute(db);
}
