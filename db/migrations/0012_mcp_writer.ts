import { type Kysely, sql } from 'kysely';
import { hasCitus } from './0010_citus';

/**
 * `retract_mcp`: the role the MCP server's write tools run as (src/mcp/write/, through the same services GraphQL
 * calls; src/store/tx.ts `withRole`). It may write only what a memory turn, a retraction, a reinstatement and a
 * proposed effect write: beliefs and their claims, justifications, contradictions, effects and their supports,
 * retractions, reversals, reinstatements and their money lines, belief history and the event log. It may not mint
 * agents or tokens, register effect kinds, take adjudication leases or touch fleets and store metadata: an MCP
 * agent that wants those goes through GraphQL. Row-level security (every policy applies to every role) keeps it to
 * the caller's fleet. The read tools keep running as `retract_reader`, read-only.
 */
const ROLE = 'retract_mcp';

/** Tables the write tools' services INSERT into or UPDATE (never DELETE). */
const MCP_WRITES = [
  'claims', 'beliefs', 'justifications', 'justification_premises', 'contradictions', 'effects', 'effect_supports',
  'retractions', 'reversals', 'reinstatements', 'reinstatement_money', 'events',
] as const;
/** Tables it only reads. */
const MCP_READS = ['store_meta', 'fleets', 'agents', 'effect_kinds'] as const;

export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  // Roles are cluster-wide: create it once, tolerate a concurrent creator (as 0001 does).
  await ddl(`DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${ROLE}') THEN
      CREATE ROLE ${ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
  END $$`);
  await ddl(`DO $$ BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
      EXECUTE format('GRANT ${ROLE} TO %I', current_user);
    END IF;
  END $$`);
  for (const t of MCP_WRITES) await ddl(`GRANT SELECT, INSERT, UPDATE ON ${t} TO ${ROLE}`);
  await ddl(`GRANT SELECT, INSERT ON belief_status_history TO ${ROLE}`);
  for (const t of MCP_READS) await ddl(`GRANT SELECT ON ${t} TO ${ROLE}`);
  await ddl(`GRANT USAGE ON SEQUENCE beliefs_id_seq TO ${ROLE}`);
  await ddl(`GRANT EXECUTE ON FUNCTION retract_authenticate(text) TO ${ROLE}`);
  await ddl(`GRANT EXECUTE ON FUNCTION retract_event_horizon() TO ${ROLE}`);
  if (await hasCitus(db)) {
    // As 0010 for the other two roles: Citus opens its worker connections as the current user and takes
    // identity values on the coordinator.
    await ddl(`ALTER ROLE ${ROLE} LOGIN`);
    await ddl(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${ROLE}`);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  await ddl(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${ROLE}`);
  await ddl(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${ROLE}`);
}
