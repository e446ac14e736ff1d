import { type Kysely, sql } from 'kysely';

/**
 * Two things every engine reads from the node that holds a fleet's rows, and, where the database has the `citus`
 * extension, the distribution itself (docs/citus.md has what each step answers).
 *
 * Every engine:
 *  - `beliefs_hnsw_nearest_json`, `beliefs_prefix_nearest_json`: the two searches of 0005 as one jsonb value, so
 *    that a search is one call Citus can delegate whole to the fleet's worker (below);
 *  - `retract_event_horizon()`: the event log's read horizon (src/event/event.repository.ts explains it), as a
 *    function. A function is evaluated where the statement that calls it runs: on Citus that is the worker holding
 *    the fleet's shard, in the same transaction-id space as the worker-stamped `events.tx` below. Inline, Citus
 *    would deparse `pg_stat_activity` into a query on `pg_authid`, which `retract_app` may not read.
 *
 * Citus only (nothing below runs elsewhere):
 *  - reference tables (one copy on every node): `fleets`, `store_meta`, `agent_tokens`;
 *  - every other table with a `fleet_id` distributed by it, all co-located with `claims`, so a fleet's rows of every
 *    table sit in one shard group on one worker, and a statement that names its fleet is routed there whole;
 *  - the foreign keys dropped first and re-added after (Citus turns a table chained to a reference table by a
 *    foreign key into a "local" table that can then not be distributed); the step runs in sequential mode so that
 *    it fits one transaction;
 *  - `events.tx` and `claims.last_tx` stamped by triggers on the shards: Citus evaluates a column default or a SET
 *    expression on the coordinator, in the coordinator's transaction-id space, while readers compare them with
 *    snapshots taken on the worker;
 *  - the two cross-fleet SECURITY DEFINER functions in plpgsql (Citus cannot plan a LANGUAGE sql function with
 *    parameters over distributed tables), and the functions above created on every node;
 *  - `retract_app` and `retract_reader` may log in: Citus opens its connections to the workers as the current
 *    user. (The cluster decides how they authenticate: trust on loopback here, scram in production.) And
 *    `retract_app` gets UPDATE on `fleets`, which Citus' lock before a reference-table write requires.
 */
const REFERENCE_TABLES = ['fleets', 'store_meta', 'agent_tokens'];

const HORIZON = `SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
      WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a
                         WHERE a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
                           AND a.backend_xid::text::bigint = (x::text::numeric % 4294967296)::bigint)),
    pg_snapshot_xmax(pg_current_snapshot()))`;

/** The nearest-belief functions of 0005 (name, parameters, the call's arguments), each wrapped as `<name>_json`. */
const NEAREST = [
  ['beliefs_hnsw_nearest', 'p_fleet text, p_prefix text, p_query vector, p_k int, p_ef int', 'p_fleet, p_prefix, p_query, p_k, p_ef'],
  ['beliefs_prefix_nearest', 'p_fleet text, p_prefix text, p_end text, p_query vector, p_k int, p_candidates int', 'p_fleet, p_prefix, p_end, p_query, p_k, p_candidates'],
] as const;

interface ForeignKey { table: string; name: string; def: string }

export async function hasCitus(db: Kysely<any>): Promise<boolean> {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'citus'`.execute(db);
  return r.rows[0]!.n > 0;
}

export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  await ddl(`CREATE FUNCTION retract_event_horizon() RETURNS xid8 LANGUAGE sql STABLE AS $$ ${HORIZON} $$`);
  await ddl(`GRANT EXECUTE ON FUNCTION retract_event_horizon() TO retract_app, retract_reader`);
  // 0005's exact search named its fleet on the candidates only; its re-rank read beliefs by id alone, which on Citus
  // is a statement over every shard (and from inside a worker). Both now name it.
  await ddl(`CREATE OR REPLACE FUNCTION beliefs_prefix_nearest(p_fleet text, p_prefix text, p_end text, p_query vector, p_k int, p_candidates int)
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
          WHERE b.fleet_id = $1 AND b.id IN (SELECT c.id FROM c)
          ORDER BY 2, 1
          LIMIT $5'
        USING p_fleet, p_prefix, p_end, p_query, p_k, p_candidates;
    END
    $fn$`);
  for (const [name, args, call] of NEAREST) {
    await ddl(`CREATE FUNCTION ${name}_json(${args}) RETURNS jsonb LANGUAGE sql STABLE AS $$
      SELECT coalesce(jsonb_agg(jsonb_build_array(n.id::text, n.distance) ORDER BY n.distance, n.id), '[]') FROM ${name}(${call}) n $$`);
  }
  if (!(await hasCitus(db))) return;

  await ddl(`SET LOCAL citus.multi_shard_modify_mode TO 'sequential'`);
  const fks = (await sql<ForeignKey>`
    SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS def
      FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace ORDER BY 1, 2`.execute(db)).rows;
  for (const fk of fks) await ddl(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);

  for (const t of REFERENCE_TABLES) await ddl(`SELECT create_reference_table('${t}')`);
  const fleetTables = (await sql<{ t: string }>`
    SELECT c.relname AS t FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'fleet_id' AND NOT a.attisdropped
     WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND c.relname <> ALL(${REFERENCE_TABLES}::text[])
     ORDER BY c.relname <> 'claims', c.relname`.execute(db)).rows.map((r) => r.t);
  for (const t of fleetTables) {
    await ddl(`SELECT create_distributed_table('${t}', 'fleet_id'${t === 'claims' ? '' : `, colocate_with => 'claims'`})`);
  }
  for (const fk of fks) await ddl(`ALTER TABLE ${fk.table} ADD CONSTRAINT ${fk.name} ${fk.def}`);

  await ddl(`SET LOCAL citus.enable_unsafe_triggers = on`);
  await ddl(`CREATE FUNCTION retract_stamp_events_tx() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN NEW.tx := pg_current_xact_id(); RETURN NEW; END $$`);
  await ddl(`CREATE TRIGGER events_stamp_tx BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION retract_stamp_events_tx()`);
  // Only a write that sets last_tx moves it (the turn's claim bump); other updates of a claim keep it.
  await ddl(`CREATE FUNCTION retract_stamp_claims_tx() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.last_tx IS DISTINCT FROM OLD.last_tx THEN NEW.last_tx := pg_current_xact_id(); END IF;
      RETURN NEW;
    END $$`);
  await ddl(`CREATE TRIGGER claims_stamp_tx BEFORE UPDATE ON claims FOR EACH ROW EXECUTE FUNCTION retract_stamp_claims_tx()`);

  await ddl(`CREATE OR REPLACE FUNCTION retract_dispatch_fleets(p_resend_window_ms bigint)
    RETURNS TABLE (fleet_id text, ready bigint, stuck bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
    BEGIN
      RETURN QUERY
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
       ORDER BY r.fleet_id;
    END $$`);
  await ddl(`CREATE OR REPLACE FUNCTION retract_locate_reversal(p_reversal_id bigint, p_idempotency_key text)
    RETURNS TABLE (id bigint, fleet_id text, idempotency_key text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
    BEGIN
      RETURN QUERY
      SELECT r.id, r.fleet_id, r.idempotency_key FROM reversals r
       WHERE (p_reversal_id IS NOT NULL AND r.id = p_reversal_id)
          OR (p_reversal_id IS NULL AND r.idempotency_key = p_idempotency_key)
       ORDER BY r.id
       LIMIT 2;
    END $$`);
  for (const f of ['retract_event_horizon()', 'retract_ref_fold(text)']) await ddl(`SELECT create_distributed_function('${f}')`);
  // The searches: a call of `<name>_json` alone is run on the fleet's worker, inside the transaction, where the
  // function's SET clauses (planner settings, hnsw.ef_search) then apply to its own query (src/belief/nearest.repository.ts).
  for (const [name, args] of NEAREST) {
    const types = args.split(', ').map((a) => a.split(' ')[1]).join(', ');
    await ddl(`SELECT create_distributed_function('${name}(${types})')`);
    await ddl(`SELECT create_distributed_function('${name}_json(${types})', 'p_fleet', colocate_with => 'beliefs', force_delegation => true)`);
  }

  for (const role of ['retract_app', 'retract_reader']) await ddl(`ALTER ROLE ${role} LOGIN`);
  // A write to a reference table first locks its placement on a worker with lock_shard_resources, which asks
  // for UPDATE (or DELETE, TRUNCATE) on the table; the fleet's own row is still all that RLS lets it touch.
  await ddl(`GRANT UPDATE ON fleets TO retract_app`);
  // An INSERT … SELECT that Citus runs through the coordinator takes the identity and serial values there, with
  // nextval() as the current user (PostgreSQL spares the inserting role that check for its own defaults).
  await ddl(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO retract_app`);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (await hasCitus(db)) throw new Error('0010_citus: a distributed store cannot be undistributed by a migration');
  for (const [name, args] of NEAREST) await sql.raw(`DROP FUNCTION IF EXISTS ${name}_json(${args})`).execute(db);
  await sql`DROP FUNCTION IF EXISTS retract_event_horizon()`.execute(db);
}
