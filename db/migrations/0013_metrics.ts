import { type Kysely, sql } from 'kysely';

/**
 * What GET /metrics reads across fleets (src/server/metrics), through one narrow SECURITY DEFINER function owned by
 * the migrating role, like retract_dispatch_fleets: aggregates only, never a row's contents. Per fleet, status and
 * currency: how many open reversals (OWED, DISPATCHED, UNREACHABLE) and re-executions owed (reinstatement_money
 * REEXECUTION_OWED) there are, their sum in minor units, and when the oldest of them was recorded; and per fleet the
 * oldest PENDING effect (the executor's backlog; status 'PENDING_EFFECT', no currency, no sum).
 * plpgsql rather than sql, as 0010 rewrote the dispatch functions: Citus plans its body at call time.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  await ddl(`CREATE FUNCTION retract_metrics_open()
    RETURNS TABLE (fleet_id text, status text, currency text, n bigint, amount_minor numeric, oldest timestamptz)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
    BEGIN
      RETURN QUERY
      SELECT r.fleet_id, r.status, r.currency, count(*), sum(r.amount_minor)::numeric, min(r.created_at)
        FROM reversals r WHERE r.status IN ('OWED', 'DISPATCHED', 'UNREACHABLE')
       GROUP BY r.fleet_id, r.status, r.currency
      UNION ALL
      SELECT m.fleet_id, m.line, m.currency, count(*), sum(m.amount_minor)::numeric, min(m.created_at)
        FROM reinstatement_money m WHERE m.line = 'REEXECUTION_OWED'
       GROUP BY m.fleet_id, m.line, m.currency
      UNION ALL
      SELECT e.fleet_id, 'PENDING_EFFECT'::text, NULL::text, count(*), NULL::numeric, min(e.created_at)
        FROM effects e WHERE e.status = 'PENDING'
       GROUP BY e.fleet_id;
    END $$`);
  await ddl(`REVOKE ALL ON FUNCTION retract_metrics_open() FROM PUBLIC`);
  await ddl(`GRANT EXECUTE ON FUNCTION retract_metrics_open() TO retract_app, retract_reader`);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS retract_metrics_open()`.execute(db);
}
