import { type RawBuilder, type Selectable, sql } from 'kysely';
import { type Page, encodeIdCursor, newestFirstPage, pageOf } from '../kernel/page';
import type { BeliefTable } from '../store/schema';
import { insertEvents, insertLevelEvents } from '../event/event.repository';
import { intArray } from '../store/pg-array';
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
export function claimKeyEquals(key: string) {
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
      ${insertEvents(b.fleet, { type: 'BeliefAsserted', actorId: b.authorId, ids: sql`ARRAY[${b.id}::bigint]`, data: JSON.stringify({ claimKey: b.claimKey }) })}
    )
    SELECT * FROM b`.execute(db);
  return rows[0]!;
}

/**
 * Marks the beliefs a cascade settled to fall (`ids`, each at its level in `levels`) as retracted by
 * `retractionId`, and writes their BeliefRetracted rows (in cascade order, insertLevelEvents), in one
 * statement; returns how many were ACTIVE to mark. unnest of a sub-select: the planner cannot see
 * the array's length and estimates a few rows, so it probes the primary key per fallen belief
 * instead of hashing the whole table (a seq scan of every belief would tie the cost to the store).
 */
export async function markRetracted(
  db: Db,
  fleet: string,
  retractionId: string,
  actorId: string,
  ids: readonly number[],
  levels: readonly number[],
): Promise<number> {
  const r = await sql<{ n: number }>`
    WITH fell AS (
      UPDATE beliefs b SET status = 'RETRACTED', retraction_id = ${retractionId}, retraction_depth = f.depth, retracted_at = now()
        FROM unnest((SELECT ${intArray(ids)}::bigint[]), (SELECT ${intArray(levels)}::int[])) AS f(id, depth)
       WHERE b.fleet_id = ${fleet} AND b.id = f.id AND b.status = 'ACTIVE'
      RETURNING b.id
    ), ev AS (
      ${insertLevelEvents(fleet, { type: 'BeliefRetracted', actorId, retractionId }, ids, levels)}
    )
    SELECT count(*)::int AS n FROM fell`.execute(db);
  return r.rows[0]!.n;
}

/** What a reinstatement closes: the RETRACTED intervals that retraction `retractionId` opened on `ids` (a bigint[] expression, e.g. a sub-select of one). */
interface Reinstated {
  reinstatementId: string;
  retractionId: string;
  /** The reinstating agent. */
  actorId: string;
  ids: RawBuilder<unknown>;
}

/**
 * For bringBack: closes (in belief_status_history, read by belief-history.repository.ts), as of now, the current RETRACTED interval of each belief of `r.ids` that
 * `r.retractionId` took down. A CTE of the reinstating statement, beside the UPDATE that sets them ACTIVE: every
 * part of one statement reads the rows as they were before it, so it still sees the retraction columns that clears.
 */
function reinstatedIntervals(fleet: string, r: Reinstated): RawBuilder<{ belief_id: string }> {
  return sql`
    INSERT INTO belief_status_history AS h (fleet_id, belief_id, retraction_id, retraction_depth, retracted_at, reinstatement_id, reinstated_by, reinstated_at)
    SELECT b.fleet_id, b.id, b.retraction_id, b.retraction_depth, b.retracted_at, ${r.reinstatementId}, ${r.actorId}, now()
      FROM unnest(${r.ids}) AS f(id)
      JOIN beliefs b ON b.fleet_id = ${fleet} AND b.id = f.id
     WHERE b.retraction_id = ${r.retractionId}
    RETURNING h.belief_id`;
}

/**
 * The inverse of markRetracted, for a reinstatement: the beliefs `ids` come back ACTIVE (only those still down
 * under `retractionId`), the RETRACTED interval each one leaves is closed now (belief-history.repository.ts), and
 * their BeliefReinstated rows are written in order: one statement; returns how many came back. The history CTE
 * reads the rows as they were before this statement (every part of one statement does), and runs though nothing
 * selects from it.
 */
export async function bringBack(
  db: Db,
  fleet: string,
  r: { reinstatementId: string; retractionId: string; actorId: string },
  ids: readonly number[],
  levels: readonly number[],
): Promise<number> {
  const set = sql`(SELECT ${intArray(ids)}::bigint[])`;
  const n = await sql<{ n: number }>`
    WITH history AS (
      ${reinstatedIntervals(fleet, { ...r, ids: set })}
    ), up AS (
      UPDATE beliefs b SET status = 'ACTIVE', retraction_id = NULL, retraction_depth = NULL, retracted_at = NULL
        FROM unnest(${set}) AS f(id)
       WHERE b.fleet_id = ${fleet} AND b.id = f.id AND b.retraction_id = ${r.retractionId}
      RETURNING b.id
    ), ev AS (
      ${insertLevelEvents(fleet, { type: 'BeliefReinstated', actorId: r.actorId, retractionId: r.retractionId, data: { reinstatementId: r.reinstatementId } }, ids, levels)}
    )
    SELECT count(*)::int AS n FROM up`.execute(db);
  return n.rows[0]!.n;
}

/** The claim's ACTIVE belief, if any, other than `beliefId` (whose claim it shares). */
export async function activeRivalOf(
  db: Db,
  fleet: string,
  beliefId: string,
): Promise<{ id: string; claim_key: string } | undefined> {
  return (
    await sql<{ id: string; claim_key: string }>`
    SELECT a.id::text AS id, a.claim_key FROM beliefs b
      JOIN beliefs a ON a.fleet_id = b.fleet_id AND a.claim_key = b.claim_key AND a.status = 'ACTIVE' AND a.id <> b.id
     WHERE b.fleet_id = ${fleet} AND b.id = ${beliefId}`.execute(db)
  ).rows[0];
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

/** A newest-first page of the beliefs that cite `beliefId` as a premise, with their count. */
export async function dependentPage(
  db: Db,
  fleet: string,
  beliefId: string,
  first: number,
  after: string | null,
): Promise<Page<BeliefRow>> {
  const rows = await sql<BeliefRow>`
    SELECT DISTINCT ${sql.join(BELIEF_COLUMNS.map((c) => sql.ref(`b.${c}`)))} FROM beliefs b
      JOIN justifications j ON j.fleet_id = b.fleet_id AND j.belief_id = b.id
      JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
     WHERE b.fleet_id = ${fleet} AND p.premise_id = ${beliefId} ${after ? sql`AND b.id < ${after}::bigint` : sql``}
     ORDER BY b.id DESC LIMIT ${first + 1}`.execute(db);
  const total = await sql<{ n: number }>`
    SELECT count(DISTINCT j.belief_id)::int AS n FROM justifications j
      JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
     WHERE j.fleet_id = ${fleet} AND p.premise_id = ${beliefId}`.execute(db);
  return pageOf(rows.rows, first, (r) => encodeIdCursor(r.id), total.rows[0]!.n);
}
