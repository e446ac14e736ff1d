import { type Selectable, sql } from 'kysely';
import { type Page, newestFirstPage } from '../kernel/page';
import type { BeliefTable } from '../store/schema';
import type { Db } from '../store/tx';

/**
 * The SQL of beliefs and their claims. Every statement names its fleet on every relation it reads
 * or writes; row-level security (the transaction's fleet) stays as the second wall.
 */

/** A belief as every reader sees it: its row without the embedding. */
export type BeliefRow = Omit<Selectable<BeliefTable>, 'embedding'>;

export const BELIEF_COLUMNS = [
  'id',
  'fleet_id',
  'claim_key',
  'statement',
  'value',
  'evidence',
  'author_id',
  'grounded',
  'status',
  'created_at',
  'retracted_at',
  'retraction_id',
  'retraction_depth',
] as const;

export async function beliefsByIds(db: Db, fleet: string, ids: readonly string[]): Promise<BeliefRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('beliefs')
    .select(BELIEF_COLUMNS)
    .where('fleet_id', '=', fleet)
    .where('id', 'in', ids as string[])
    .execute();
}

/**
 * `claim_key = key`, stated in the database's collation AND in "C" (the same rows: equality in a
 * deterministic collation is byte equality), so both partial ACTIVE indexes that lead with
 * (fleet_id, claim_key) can search on the key: beliefs_one_active_per_claim (default collation) and
 * beliefs_prefix_embedding ("C"). With one form only and no statistics (autovacuum off, as on this
 * project's CI server, or a table not yet analyzed) the planner could take the other index for a
 * fleet-wide scan filtered on claim_key: every turn read every ACTIVE belief of its fleet, growing
 * with the table, and its relation-wide read locks made concurrent writers fail serialization
 * (FINDINGS §6, turns).
 */
function claimKeyEquals(key: string) {
  return sql<boolean>`(claim_key = ${key} AND claim_key COLLATE "C" = ${key})`;
}

/** The query for a claim's ACTIVE belief (at most one row), to select from. */
export function activeOnClaim(db: Db, fleet: string, claimKey: string) {
  return db
    .selectFrom('beliefs')
    .where('fleet_id', '=', fleet)
    .where(claimKeyEquals(claimKey))
    .where('status', '=', 'ACTIVE');
}

export async function activeBeliefForClaim(db: Db, fleet: string, claimKey: string): Promise<BeliefRow | undefined> {
  return activeOnClaim(db, fleet, claimKey).select(BELIEF_COLUMNS).executeTakeFirst();
}

/** The id of the claim's ACTIVE belief, or null. */
export async function activeBeliefIdForClaim(db: Db, fleet: string, claimKey: string): Promise<string | null> {
  return (await activeOnClaim(db, fleet, claimKey).select('id').executeTakeFirst())?.id ?? null;
}

/** The claim's ACTIVE belief if it has one, else its newest: what "the belief on this claim" means to a reader. */
export async function beliefIdOnClaim(db: Db, fleet: string, claimKey: string): Promise<string | null> {
  const r = await db
    .selectFrom('beliefs')
    .select('id')
    .where('fleet_id', '=', fleet)
    .where(claimKeyEquals(claimKey))
    .orderBy(sql`(status = 'ACTIVE')`, 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return r?.id ?? null;
}

/** The claim's ACTIVE belief, if any, and whether its value equals `value` (JSON text; null equals null): one statement. */
export async function activeBeliefComparedTo(
  db: Db,
  fleet: string,
  claimKey: string,
  value: string | null,
): Promise<{ belief: BeliefRow; sameValue: boolean } | undefined> {
  const row = await activeOnClaim(db, fleet, claimKey)
    .select([...BELIEF_COLUMNS, sql<boolean>`(${value}::jsonb IS NOT DISTINCT FROM value)`.as('same_value')])
    .executeTakeFirst();
  if (!row) return undefined;
  const { same_value, ...belief } = row;
  return { belief, sameValue: same_value };
}

/**
 * Locks the premises (FOR SHARE, so a concurrent retraction must wait or fail) and returns them, in
 * id order (the order the locks are taken in). One primary-key probe per id, whatever the planner
 * believes: as `id IN (…)`, a table without statistics (autovacuum off) was read through
 * beliefs_fleet_recent over the WHOLE fleet, filtered on id, and under SERIALIZABLE that read
 * predicate-locked every page of the fleet's beliefs, so every belief a concurrent turn inserted
 * made a serialization conflict (FINDINGS, stress).
 */
export async function lockBeliefs(
  db: Db,
  fleet: string,
  ids: readonly string[],
  mode: 'share' | 'update',
): Promise<BeliefRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<BeliefRow>`
    SELECT b.* FROM (SELECT DISTINCT id FROM unnest(${ids as string[]}::bigint[]) AS u(id) ORDER BY id) x
     CROSS JOIN LATERAL (
       SELECT ${sql.join(BELIEF_COLUMNS.map((c) => sql.ref(c)))} FROM beliefs
        WHERE fleet_id = ${fleet} AND id = x.id ${mode === 'share' ? sql`FOR SHARE` : sql`FOR UPDATE`}
     ) b
     ORDER BY x.id`.execute(db);
  return rows;
}

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

/** A new belief id from the beliefs' own identity sequence: what insertBeliefBumpClaim writes under. */
export async function nextBeliefId(db: Db): Promise<string> {
  const { rows } = await sql<{ id: string }>`SELECT nextval('beliefs_id_seq')::text AS id`.execute(db);
  return rows[0]!.id;
}

/**
 * Writes a new ACTIVE belief under `id` (drawn from its sequence), bumps its claim (version, last_tx) and appends its
 * BeliefAsserted event (the row appendEvent would write), in ONE statement of constants. Caller holds the claim lock.
 * No part reads another's rows (the event names `id`, not the belief CTE's output): on Citus the whole statement is
 * the fleet's worker's, where an INSERT … SELECT from the belief's CTE sent its row to every worker and committed
 * with two-phase commit.
 */
export async function insertBeliefBumpClaim(
  db: Db,
  b: {
    id: string;
    fleet: string;
    authorId: string;
    claimKey: string;
    statement: string;
    value: string | null;
    evidence: string | null;
    grounded: boolean;
    vector: string;
  },
): Promise<BeliefRow> {
  const { rows } = await sql<BeliefRow>`
    WITH b AS (
      INSERT INTO beliefs (id, fleet_id, claim_key, statement, value, evidence, author_id, grounded, embedding) OVERRIDING SYSTEM VALUE
      VALUES (${b.id}, ${b.fleet}, ${b.claimKey}, ${b.statement}, ${b.value}, ${b.evidence}, ${b.authorId}, ${b.grounded}, ${b.vector})
      RETURNING ${sql.join(BELIEF_COLUMNS.map((c) => sql.ref(c)))}
    ), bumped AS (
      UPDATE claims SET version = version + 1, last_tx = pg_current_xact_id() WHERE fleet_id = ${b.fleet} AND key = ${b.claimKey}
    ), event AS (
      INSERT INTO events (fleet_id, type, actor_id, ids, data)
      VALUES (${b.fleet}, 'BeliefAsserted', ${b.authorId}, ARRAY[${b.id}::bigint], ${JSON.stringify({ claimKey: b.claimKey })}::jsonb)
    )
    SELECT * FROM b`.execute(db);
  return rows[0]!;
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
 */
export async function lockClaimReadActive(
  db: Db,
  fleet: string,
  key: string,
  value: string | null,
  snapshot: string | null,
): Promise<LockedClaim> {
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

/**
 * The claim row created if needed and read, NOT locked, with the claim's ACTIVE belief: what
 * lockClaimReadActive does without its row lock. Only for experiments/concurrency_eval.ts (arm B),
 * which measures what SERIALIZABLE alone does without the lock.
 */
export async function claimReadUnlocked(
  db: Db,
  fleet: string,
  key: string,
  value: string | null,
  snapshot: string | null,
): Promise<LockedClaim> {
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

/**
 * Marks the beliefs a cascade settled to fall (`ids`, each at its level in `levels`) as retracted by
 * `retractionId`, and writes their BeliefRetracted rows (`events`, in cascade order), in one
 * statement; returns how many were ACTIVE to mark. unnest of a sub-select: the planner cannot see
 * the array's length and estimates a few rows, so it probes the primary key per fallen belief
 * instead of hashing the whole table (a seq scan of every belief would tie the cost to the store).
 */
export async function markRetracted(
  db: Db,
  fleet: string,
  retractionId: string,
  actorId: string,
  fell: { ids: string; levels: string },
  events: { depth: string; ids: string; sizes: string },
): Promise<number> {
  const r = await sql<{ n: number }>`
    WITH fell AS (
      UPDATE beliefs b SET status = 'RETRACTED', retraction_id = ${retractionId}, retraction_depth = f.depth, retracted_at = now()
        FROM unnest((SELECT ${fell.ids}::bigint[]), (SELECT ${fell.levels}::int[])) AS f(id, depth)
       WHERE b.fleet_id = ${fleet} AND b.id = f.id AND b.status = 'ACTIVE'
      RETURNING b.id
    ), ev AS (
      INSERT INTO events (fleet_id, type, retraction_id, depth, ids, data, actor_id)
      SELECT ${fleet}, 'BeliefRetracted', ${retractionId}, e.depth, e.ids::bigint[],
             CASE WHEN e.sizes IS NULL THEN NULL ELSE jsonb_build_object('levels', e.sizes::jsonb) END, ${actorId}
        FROM unnest(${events.depth}::int[], ${events.ids}::text[], ${events.sizes}::text[]) WITH ORDINALITY AS e(depth, ids, sizes, ord)
       ORDER BY e.ord
      RETURNING seq
    )
    SELECT count(*)::int AS n FROM fell`.execute(db);
  return r.rows[0]!.n;
}

/** A newest-first page of the fleet's beliefs, of a claim-key prefix (literally) and a status when given. */
export async function beliefPage(
  db: Db,
  fleet: string,
  f: {
    prefix: string | null;
    status: BeliefRow['status'] | null;
    ids?: readonly string[] | null;
    first: number;
    after: string | null;
  },
): Promise<Page<BeliefRow>> {
  let q = db.selectFrom('beliefs').where('fleet_id', '=', fleet);
  if (f.ids) q = f.ids.length === 0 ? q.where(sql<boolean>`false`) : q.where('id', 'in', f.ids as string[]);
  if (f.prefix) q = q.where('claim_key', 'like', f.prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%');
  if (f.status) q = q.where('status', '=', f.status);
  const listed = q;
  return newestFirstPage(
    f.first,
    (limit) =>
      (f.after ? listed.where('id', '<', f.after) : listed)
        .select(BELIEF_COLUMNS)
        .orderBy('id', 'desc')
        .limit(limit)
        .execute(),
    async () => (await listed.select((e) => e.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n,
  );
}
