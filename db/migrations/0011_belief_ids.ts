import { type Kysely, sql } from 'kysely';
import { hasCitus } from './0010_citus';

/**
 * The application role draws belief ids itself (nextval of the beliefs' identity sequence), so a new belief, its
 * claim's bump and its BeliefAsserted event are one statement of constants: on Citus one worker's task, where an
 * INSERT … SELECT from the belief's CTE sent the row to every worker and committed with two-phase commit
 * (docs/citus.md). PostgreSQL checks no sequence privilege for a column's own identity default, so the role never
 * needed USAGE before; Citus already granted it (0010).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql.raw(`GRANT USAGE ON SEQUENCE beliefs_id_seq TO retract_app`).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  // On Citus, 0010 granted USAGE on every sequence: revoking here would take back its grant.
  if (await hasCitus(db)) return;
  await sql.raw(`REVOKE USAGE ON SEQUENCE beliefs_id_seq FROM retract_app`).execute(db);
}
