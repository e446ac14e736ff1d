import { sql } from 'kysely';
import type { Db } from '../store/tx';
import { BELIEF_COLUMNS, type BeliefRow, activeBeliefComparedTo, claimKeyEquals } from './belief.repository';

/**
 * The SQL of claims: the row every write on one claim locks first (the serialisation point of a turn's COMMIT),
 * its version and last writing transaction (what a READ snapshot is checked against). Every statement names its
 * fleet; a claim's ACTIVE belief is read through belief.repository's claim-key predicate.
 */

/**
 * Creates the claim row if needed and locks it: the serialisation point for writes on one claim.
 * One statement: the INSERT returns the row when it creates it (uncommitted, so no one else can
 * take it), else the `FOR UPDATE` read locks the existing one. A row another transaction created or
 * changed after this transaction's snapshot fails with SQLSTATE 40001 (retried by src/store/tx.ts),
 * exactly as the two separate statements would.
 */
export async function lockClaim(db: Db, fleet: string, key: string): Promise<{ version: string }> {
  const { rows } = await sql<{ version: string }>`
    WITH created AS (
      INSERT INTO claims (fleet_id, key) VALUES (${fleet}, ${key}) ON CONFLICT DO NOTHING RETURNING version
    ), locked AS (
      SELECT version FROM claims WHERE fleet_id = ${fleet} AND key = ${key} FOR UPDATE
    )
    SELECT version FROM created
    UNION ALL
    SELECT version FROM locked`.execute(db);
  if (rows.length !== 1) throw new Error(`lockClaim: expected one claim row for ${key}, got ${rows.length}`);
  return { version: String(rows[0]!.version) };
}

/** What a turn learns from its first statement: the locked claim, and the claim's ACTIVE belief. */
export interface LockedClaim {
  version: string;
  /** Whether the claim's last write was visible in the given READ snapshot (true without one, or for a claim never written). */
  visibleInSnapshot: boolean;
  /** Whether the given READ snapshot is ahead of this node's current one: not a snapshot this database handed out (false without one). */
  snapshotAhead: boolean;
  /** The claim's ACTIVE belief, if any, and whether its value equals the turn's. */
  active: { belief: BeliefRow; sameValue: boolean } | undefined;
  /** Without an ACTIVE belief: an id drawn for the belief the turn will likely write (nextBeliefId, in the same round trip). */
  nextBeliefId: string | null;
}

/**
 * lockClaim + activeBeliefComparedTo + the READ-snapshot check in ONE statement, a turn's first
 * round trip: creates the claim row if needed and locks it (as lockClaim), reads the claim's ACTIVE
 * belief comparing its value with `value` (JSON text), and, given `snapshot`, whether the claim's
 * last write was visible in it. Under SERIALIZABLE every statement reads the transaction's one
 * snapshot, and a claim row changed after it fails the lock with 40001, so the belief read here is
 * exactly what a statement after the lock would read.
 *
 * A claim row this statement creates is neither read back nor searched for beliefs: no belief can
 * exist without its claim row (foreign key) and every belief is written under the claim's lock, so
 * both reads would find nothing — and under SERIALIZABLE an index search that finds nothing still
 * takes a predicate lock on the index page of the gap, where concurrent turns on neighbouring keys
 * insert: a serialization failure for many of them (FINDINGS §6, turns).
 *
 * `lock` false (Core.skipClaimLock, experiments/concurrency_eval.ts arm B only) reads the same without the row lock.
 */
export async function lockClaimReadActive(
  db: Db,
  fleet: string,
  key: string,
  value: string | null,
  snapshot: string | null,
  lock = true,
): Promise<LockedClaim> {
  if (!lock) {
    await db
      .insertInto('claims')
      .values({ fleet_id: fleet, key })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const row = await db
      .selectFrom('claims')
      .select(['version', lastWriteVisibleIn('last_tx', snapshot).as('visible'), snapshotAheadOf(snapshot).as('ahead')])
      .where('fleet_id', '=', fleet)
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    return {
      version: String(row.version),
      visibleInSnapshot: row.visible,
      snapshotAhead: row.ahead,
      active: await activeBeliefComparedTo(db, fleet, key, value),
      nextBeliefId: null,
    };
  }
  const { rows } = await lockClaimReadActiveQuery(fleet, key, value, snapshot).execute(db);
  if (rows.length !== 1) throw new Error(`lockClaimReadActive: expected one row for claim ${key}, got ${rows.length}`);
  const { claim_version, claim_visible, snapshot_ahead, same_value, next_belief_id, ...belief } = rows[0]!;
  return {
    version: claim_version,
    visibleInSnapshot: claim_visible,
    snapshotAhead: snapshot_ahead,
    active: belief.id === null ? undefined : { belief, sameValue: same_value === true },
    nextBeliefId: next_belief_id,
  };
}

/** Whether a claim's last write (its `last_tx` column) was visible in a READ snapshot; true without one or for a claim never written. */
function lastWriteVisibleIn(lastTx: string, snapshot: string | null) {
  return sql<boolean>`(${sql.ref(lastTx)} IS NULL OR ${snapshot}::pg_snapshot IS NULL OR pg_visible_in_snapshot(${sql.ref(lastTx)}, ${snapshot}::pg_snapshot))`;
}

/**
 * Whether a READ snapshot is from the future: its xmax beyond this node's next transaction id. Only a forged
 * or foreign snapshot is, and every write would look visible in it, hiding the change basedOn exists to catch.
 */
function snapshotAheadOf(snapshot: string | null) {
  return sql<boolean>`(${snapshot}::pg_snapshot IS NOT NULL AND pg_snapshot_xmax(${snapshot}::pg_snapshot) > pg_snapshot_xmax(pg_current_snapshot()))`;
}

/** The statement of lockClaimReadActive (exported for plan tests). */
export function lockClaimReadActiveQuery(fleet: string, key: string, value: string | null, snapshot: string | null) {
  return sql<
    BeliefRow & {
      claim_version: string;
      claim_visible: boolean;
      snapshot_ahead: boolean;
      same_value: boolean | null;
      next_belief_id: string | null;
    }
  >`
    WITH created AS (
      INSERT INTO claims (fleet_id, key) VALUES (${fleet}, ${key}) ON CONFLICT DO NOTHING RETURNING version, last_tx
    ), locked AS (
      SELECT version, last_tx FROM claims WHERE fleet_id = ${fleet} AND key = ${key} AND NOT EXISTS (SELECT FROM created) FOR UPDATE
    ), active AS MATERIALIZED (
      SELECT ${sql.join(BELIEF_COLUMNS.map((col) => sql.ref(col)))}, (${value}::jsonb IS NOT DISTINCT FROM value) AS same_value
        FROM beliefs WHERE NOT EXISTS (SELECT FROM created) AND fleet_id = ${fleet} AND ${claimKeyEquals(key)} AND status = 'ACTIVE'
    )
    SELECT c.version::text AS claim_version,
           ${lastWriteVisibleIn('c.last_tx', snapshot)} AS claim_visible,
           ${snapshotAheadOf(snapshot)} AS snapshot_ahead,
           CASE WHEN a.id IS NULL THEN nextval('beliefs_id_seq')::text END AS next_belief_id,
           a.*
      FROM (SELECT version, last_tx FROM created UNION ALL SELECT version, last_tx FROM locked) c
      LEFT JOIN active a ON true`;
}
