import { type Kysely, sql } from 'kysely';

/**
 * Reversal dispatch (src/dispatch, src/worker/dispatcher.ts).
 *
 * - `reversals.lease_holder`: who holds the current dispatch lease. Together with `attempts` (incremented by every
 *   take) it fences outcomes: only the take that is still the latest may record FAILED or a retry note.
 * - `reversals.last_error`: the last inconclusive or refusing answer, for an operator.
 * - `reversals.dispatched_at` keeps meaning the FIRST dispatch (the dispatcher sets it once): a re-send is only made
 *   while now() - dispatched_at is inside the resend window, which must stay below the provider's key retention.
 * - `reversals_dispatchable`: a partial index over the rows a dispatcher looks at (OWED and DISPATCHED only), so the
 *   poll costs what is in flight, not the size of the table.
 * - `reversals_key`: confirmations that name a reversal by its idempotency key only, across fleets.
 *
 * Two narrow SECURITY DEFINER functions, owned by the migrating role like retract_authenticate, are the only ways a
 * worker crosses fleets. Neither returns reversal contents:
 * - retract_dispatch_fleets(resend_window_ms): the fleets with reversals ready to send (OWED, or DISPATCHED with an
 *   expired lease inside the resend window) and how many; plus how many are stuck (expired lease, outside the window:
 *   left for an operator). The dispatcher then works each fleet in an ordinary RLS-scoped transaction.
 * - retract_locate_reversal(id, key): the id and fleet of a reversal named by a provider's signed callback.
 * Like retract_authenticate, they see every fleet because their owner (the migrating role) bypasses row security
 * (a superuser, or a role with BYPASSRLS).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);

  await ddl(`ALTER TABLE reversals ADD COLUMN lease_holder text, ADD COLUMN last_error text`);
  await ddl(`CREATE INDEX reversals_dispatchable ON reversals (fleet_id, id) WHERE status IN ('OWED', 'DISPATCHED')`);
  await ddl(`CREATE INDEX reversals_key ON reversals (idempotency_key)`);

  await ddl(`CREATE FUNCTION retract_dispatch_fleets(p_resend_window_ms bigint)
    RETURNS TABLE (fleet_id text, ready bigint, stuck bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT r.fleet_id,
             count(*) FILTER (WHERE r.status = 'OWED'
                                 OR (r.lease_expires_at < now()
                                     AND r.dispatched_at > now() - make_interval(secs => p_resend_window_ms / 1000.0))),
             count(*) FILTER (WHERE r.status = 'DISPATCHED' AND r.lease_expires_at < now()
                                AND r.dispatched_at <= now() - make_interval(secs => p_resend_window_ms / 1000.0))
        FROM reversals r
       WHERE r.status IN ('OWED', 'DISPATCHED')
       GROUP BY r.fleet_id
      HAVING count(*) FILTER (WHERE r.status = 'OWED' OR r.lease_expires_at < now()) > 0
       ORDER BY r.fleet_id
    $$`);
  await ddl(`REVOKE ALL ON FUNCTION retract_dispatch_fleets(bigint) FROM PUBLIC`);
  await ddl(`GRANT EXECUTE ON FUNCTION retract_dispatch_fleets(bigint) TO retract_app`);

  await ddl(`CREATE FUNCTION retract_locate_reversal(p_reversal_id bigint, p_idempotency_key text)
    RETURNS TABLE (id bigint, fleet_id text, idempotency_key text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT r.id, r.fleet_id, r.idempotency_key FROM reversals r
       WHERE (p_reversal_id IS NOT NULL AND r.id = p_reversal_id)
          OR (p_reversal_id IS NULL AND r.idempotency_key = p_idempotency_key)
       ORDER BY r.id
       LIMIT 2
    $$`);
  await ddl(`REVOKE ALL ON FUNCTION retract_locate_reversal(bigint, text) FROM PUBLIC`);
  await ddl(`GRANT EXECUTE ON FUNCTION retract_locate_reversal(bigint, text) TO retract_app`);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS retract_locate_reversal(bigint, text)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS retract_dispatch_fleets(bigint)`.execute(db);
  await sql`DROP INDEX IF EXISTS reversals_key`.execute(db);
  await sql`DROP INDEX IF EXISTS reversals_dispatchable`.execute(db);
  await sql`ALTER TABLE reversals DROP COLUMN IF EXISTS last_error, DROP COLUMN IF EXISTS lease_holder`.execute(db);
}
