import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../store/tx';
import { BELIEF_COLUMNS, type BeliefRow } from './belief.repository';

/**
 * Belief status through time (db/migrations/0009_belief_history.ts). A belief's CURRENT interval is on its row:
 * RETRACTED since `retracted_at` by `retraction_id`, else ACTIVE. Its closed RETRACTED intervals are rows of
 * belief_status_history, one per reinstatement that brought it back. A belief is ACTIVE at an instant when it
 * existed (`created_at`) and no RETRACTED interval — closed or current — covers the instant.
 *
 * Instants: every read takes an exclusive upper bound `bound` and describes the fleet after every change made
 * before it. An API instant T (millisecond precision, like every DateTime the API prints) reads with bound
 * T + 1 ms, so a change whose printed time is T is included; the instant before a retraction reads with bound
 * = its created_at, which is exactly the retracted_at of every belief it took down (both are now() of its
 * transaction). Changes are dated by their transaction's start, as every timestamp here is.
 */

/** A belief row as of an instant: status, retraction, depth and retractedAt as they stood then. */
export type BeliefAsOfRow = BeliefRow & { as_of: Date; current_status: BeliefRow['status'] };

/** The exclusive bound that reads the fleet as of API instant `at` (the changes printed at `at` included). */
function boundOf(at: Date): RawBuilder<Date> {
  return sql<Date>`(${at.toISOString()}::timestamptz + interval '1 millisecond')`;
}

/** The closed RETRACTED interval of belief `b` that covers the instant before `bound`, as a lateral join (alias h). */
function closedInterval(fleet: string, bound: RawBuilder<unknown>) {
  return sql`LEFT JOIN LATERAL (
      SELECT h.retraction_id, h.retraction_depth, h.retracted_at FROM belief_status_history h
       WHERE h.fleet_id = ${fleet} AND h.belief_id = b.id AND h.retracted_at < ${bound} AND h.reinstated_at >= ${bound}
       LIMIT 1) h ON true`;
}

/** True when the current RETRACTED interval of `b` had begun before `bound`. */
function currentlyDownBy(bound: RawBuilder<unknown>) {
  return sql`(b.status = 'RETRACTED' AND b.retracted_at < ${bound})`;
}

/** The select list of a BeliefAsOfRow over `beliefs b` joined with closedInterval (alias h). */
function asOfColumns(bound: RawBuilder<unknown>, asOf: RawBuilder<unknown>) {
  const down = currentlyDownBy(bound);
  const plain = BELIEF_COLUMNS.filter(
    (c) => !['status', 'retraction_id', 'retraction_depth', 'retracted_at', 'id', 'author_id'].includes(c),
  );
  return sql`b.id::text AS id, b.author_id::text AS author_id, ${sql.join(plain.map((c) => sql.ref(`b.${c}`)))},
    CASE WHEN h.retraction_id IS NOT NULL OR ${down} THEN 'RETRACTED' ELSE 'ACTIVE' END AS status,
    COALESCE(h.retraction_id, CASE WHEN ${down} THEN b.retraction_id END)::text AS retraction_id,
    COALESCE(h.retraction_depth, CASE WHEN ${down} THEN b.retraction_depth END) AS retraction_depth,
    COALESCE(h.retracted_at, CASE WHEN ${down} THEN b.retracted_at END) AS retracted_at,
    b.status AS current_status, (${asOf})::timestamptz AS as_of`;
}

/** SQL true when belief `b` existed and was ACTIVE just before `bound`. */
function activeBefore(fleet: string, bound: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`(b.created_at < ${bound} AND NOT ${currentlyDownBy(bound)} AND NOT EXISTS (
      SELECT 1 FROM belief_status_history h
       WHERE h.fleet_id = ${fleet} AND h.belief_id = b.id AND h.retracted_at < ${bound} AND h.reinstated_at >= ${bound}))`;
}

/** The given beliefs (that existed then) as of API instant `at`, in no particular order. */
async function beliefsAsOf(db: Db, fleet: string, ids: readonly string[], at: Date): Promise<BeliefAsOfRow[]> {
  if (ids.length === 0) return [];
  const bound = boundOf(at);
  const r = await sql<BeliefAsOfRow>`
    SELECT ${asOfColumns(bound, sql`${at.toISOString()}`)}
      FROM beliefs b ${closedInterval(fleet, bound)}
     WHERE b.fleet_id = ${fleet} AND b.id = ANY(${ids as string[]}::bigint[]) AND b.created_at < ${bound}`.execute(db);
  return r.rows;
}

/** The belief that was ACTIVE on the claim at API instant `at` (at most one: invariant 1 holds at every commit). */
export async function activeOnClaimAsOf(
  db: Db,
  fleet: string,
  claimKey: string,
  at: Date,
): Promise<BeliefAsOfRow | undefined> {
  const bound = boundOf(at);
  const r = await sql<BeliefAsOfRow>`
    SELECT ${asOfColumns(bound, sql`${at.toISOString()}`)}
      FROM beliefs b ${closedInterval(fleet, bound)}
     WHERE b.fleet_id = ${fleet} AND b.claim_key = ${claimKey} AND ${activeBefore(fleet, bound)}
     ORDER BY b.id DESC LIMIT 1`.execute(db);
  return r.rows[0];
}

/**
 * A newest-first page of the fleet's beliefs as of API instant `at` (those that existed then, with their status
 * then; `status` filters on it), and how many match in all. Reads the fleet's rows up to `at`: a scan of the
 * fleet, as the page's totalCount already is.
 */
export async function beliefPageAsOf(
  db: Db,
  fleet: string,
  at: Date,
  f: {
    prefix: string | null;
    status: BeliefRow['status'] | null;
    ids: string[] | null;
    afterId: string | null;
    limit: number;
  },
): Promise<{ rows: BeliefAsOfRow[]; total: number }> {
  const bound = boundOf(at);
  const where = sql`b.fleet_id = ${fleet} AND b.created_at < ${bound}
    ${f.prefix === null ? sql`` : sql`AND b.claim_key ^@ ${f.prefix}`}
    ${f.ids === null ? sql`` : sql`AND b.id = ANY(${f.ids}::bigint[])`}
    ${f.status === null ? sql`` : f.status === 'ACTIVE' ? sql`AND ${activeBefore(fleet, bound)}` : sql`AND NOT ${activeBefore(fleet, bound)}`}`;
  const rows = await sql<BeliefAsOfRow>`
    SELECT ${asOfColumns(bound, sql`${at.toISOString()}`)}
      FROM beliefs b ${closedInterval(fleet, bound)}
     WHERE ${where} ${f.afterId === null ? sql`` : sql`AND b.id < ${f.afterId}::bigint`}
     ORDER BY b.id DESC LIMIT ${f.limit}`.execute(db);
  const total = await sql<{ n: number }>`SELECT count(*)::int AS n FROM beliefs b WHERE ${where}`.execute(db);
  return { rows: rows.rows, total: total.rows[0]!.n };
}

/**
 * The k beliefs ACTIVE at API instant `at` (or, with `includeRetracted`, every belief that existed then) nearest
 * to `vector` by cosine distance, ties by id, ranked exactly: the HNSW and prefix indexes hold today's ACTIVE
 * beliefs only, so a past instant is ranked over the fleet's rows (of the prefix, if any), as includeRetracted
 * is today. Its cost grows with the beliefs the fleet (or prefix) holds.
 */
function nearestAsOf(
  fleet: string,
  at: Date,
  a: { vector: string; k: number; includeRetracted: boolean; prefix: string | null },
): RawBuilder<{ id: string; distance: number }> {
  const bound = boundOf(at);
  return sql`
    SELECT b.id, b.embedding <=> ${a.vector}::vector AS distance FROM beliefs b
     WHERE b.fleet_id = ${fleet} AND b.created_at < ${bound}
       ${a.prefix === null ? sql`` : sql`AND b.claim_key ^@ ${a.prefix}`}
       ${a.includeRetracted ? sql`` : sql`AND ${activeBefore(fleet, bound)}`}
     ORDER BY distance, b.id
     LIMIT ${a.k}`;
}

/** For each effect id, the beliefs it rested on as they stood when it executed (none for an effect not executed). */
export async function supportAtExecution(
  db: Db,
  fleet: string,
  effectIds: readonly string[],
): Promise<Array<BeliefAsOfRow & { effect_id: string }>> {
  if (effectIds.length === 0) return [];
  // Inclusive of executed_at itself: what the executor's report was made against.
  const bound = sql`(e.executed_at + interval '1 microsecond')`;
  const r = await sql<BeliefAsOfRow & { effect_id: string }>`
    SELECT e.id::text AS effect_id, ${asOfColumns(bound, sql`e.executed_at`)}
      FROM effects e
      JOIN effect_supports s ON s.fleet_id = e.fleet_id AND s.effect_id = e.id
      JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
      ${closedInterval(fleet, bound)}
     WHERE e.fleet_id = ${fleet} AND e.id = ANY(${effectIds as string[]}::bigint[]) AND e.executed_at IS NOT NULL
     ORDER BY e.id, b.id`.execute(db);
  return r.rows;
}

/**
 * The beliefs a retraction took down, as they stood the instant before it (all ACTIVE then, by definition, with
 * their value, statement and evidence), in cascade order (depth, id), keyset-paged; whether they are still down
 * or were reinstated since. `after` is a (depth, id) position.
 */
export async function retractionBeforePage(
  db: Db,
  fleet: string,
  retractionId: string,
  after: { depth: number; id: string } | null,
  limit: number,
): Promise<{ rows: Array<BeliefAsOfRow & { depth: number }>; total: number }> {
  const radius = sql`
    SELECT b.id AS belief_id, b.retraction_depth AS depth FROM beliefs b WHERE b.fleet_id = ${fleet} AND b.retraction_id = ${retractionId}
    UNION ALL
    SELECT h.belief_id, h.retraction_depth FROM belief_status_history h WHERE h.fleet_id = ${fleet} AND h.retraction_id = ${retractionId}`;
  const bound = sql`(SELECT r.created_at FROM retractions r WHERE r.fleet_id = ${fleet} AND r.id = ${retractionId})`;
  const rows = await sql<BeliefAsOfRow & { depth: number }>`
    WITH radius AS (${radius}), t AS MATERIALIZED (SELECT ${bound} AS bound)
    SELECT x.depth, ${asOfColumns(sql`t.bound`, sql`t.bound - interval '1 microsecond'`)}
      FROM radius x CROSS JOIN t
      JOIN beliefs b ON b.fleet_id = ${fleet} AND b.id = x.belief_id
      ${closedInterval(fleet, sql`t.bound`)}
     ${after === null ? sql`` : sql`WHERE (x.depth, x.belief_id) > (${after.depth}, ${after.id}::bigint)`}
     ORDER BY x.depth, x.belief_id LIMIT ${limit}`.execute(db);
  const total = await sql<{ n: number }>`WITH radius AS (${radius}) SELECT count(*)::int AS n FROM radius`.execute(db);
  return { rows: rows.rows, total: total.rows[0]!.n };
}

/** One interval of a belief's status: [from, to), `to` null for the current one. */
export interface StatusInterval {
  belief_id: string;
  /** The belief's status now: the read rule it follows. */
  current_status: BeliefRow['status'];
  status: BeliefRow['status'];
  from: Date;
  to: Date | null;
  /** The retraction that opened a RETRACTED interval, or closed an ACTIVE one. */
  retraction_id: string | null;
  /** The reinstatement that closed a RETRACTED interval, or opened an ACTIVE one. */
  reinstatement_id: string | null;
  /** Who began this interval: the author of the assertion, the retraction's actor, or the reinstating agent. */
  changed_by: string;
}

/** Every status interval of each of the given beliefs, oldest first. */
export async function statusIntervals(db: Db, fleet: string, beliefIds: readonly string[]): Promise<StatusInterval[]> {
  if (beliefIds.length === 0) return [];
  const r = await sql<{
    belief_id: string;
    author_id: string;
    created_at: Date;
    status: BeliefRow['status'];
    retracted_at: Date | null;
    retraction_id: string | null;
    retracted_by: string | null;
    episodes: Array<{
      retraction_id: string;
      retracted_by: string;
      retracted_at: string;
      reinstatement_id: string;
      reinstated_by: string;
      reinstated_at: string;
    }>;
  }>`
    SELECT b.id::text AS belief_id, b.author_id::text AS author_id, b.created_at, b.status, b.retracted_at, b.retraction_id::text AS retraction_id,
           (SELECT r.actor_id::text FROM retractions r WHERE r.fleet_id = ${fleet} AND r.id = b.retraction_id) AS retracted_by,
           COALESCE((SELECT json_agg(json_build_object(
                       'retraction_id', h.retraction_id::text, 'retracted_by', r.actor_id::text, 'retracted_at', h.retracted_at,
                       'reinstatement_id', h.reinstatement_id::text, 'reinstated_by', h.reinstated_by::text, 'reinstated_at', h.reinstated_at)
                       ORDER BY h.retracted_at)
                       FROM belief_status_history h JOIN retractions r ON r.fleet_id = h.fleet_id AND r.id = h.retraction_id
                      WHERE h.fleet_id = ${fleet} AND h.belief_id = b.id), '[]') AS episodes
      FROM beliefs b WHERE b.fleet_id = ${fleet} AND b.id = ANY(${beliefIds as string[]}::bigint[])
     ORDER BY b.id`.execute(db);
  const out: StatusInterval[] = [];
  for (const b of r.rows) {
    const at = (x: Omit<StatusInterval, 'belief_id' | 'current_status'>) =>
      out.push({ belief_id: b.belief_id, current_status: b.status, ...x });
    // Each RETRACTED interval, the closed ones and then the current one (open-ended), follows an ACTIVE one.
    const down: Array<{
      retraction_id: string;
      retracted_by: string;
      retracted_at: Date;
      reinstatement_id: string | null;
      reinstated_by: string;
      reinstated_at: Date | null;
    }> = b.episodes.map((e) => ({
      ...e,
      retracted_at: new Date(e.retracted_at),
      reinstated_at: new Date(e.reinstated_at),
    }));
    if (b.status === 'RETRACTED')
      down.push({
        retraction_id: b.retraction_id!,
        retracted_by: b.retracted_by!,
        retracted_at: b.retracted_at!,
        reinstatement_id: null,
        reinstated_by: b.retracted_by!,
        reinstated_at: null,
      });
    let from = b.created_at;
    let opener = { by: b.author_id, reinstatement: null as string | null };
    for (const e of down) {
      const base = { retraction_id: e.retraction_id };
      at({
        ...base,
        status: 'ACTIVE',
        from,
        to: e.retracted_at,
        reinstatement_id: opener.reinstatement,
        changed_by: opener.by,
      });
      at({
        ...base,
        status: 'RETRACTED',
        from: e.retracted_at,
        to: e.reinstated_at,
        reinstatement_id: e.reinstatement_id,
        changed_by: e.retracted_by,
      });
      if (e.reinstated_at) from = e.reinstated_at;
      opener = { by: e.reinstated_by, reinstatement: e.reinstatement_id };
    }
    if (b.status !== 'RETRACTED')
      at({
        status: 'ACTIVE',
        from,
        to: null,
        retraction_id: null,
        reinstatement_id: opener.reinstatement,
        changed_by: opener.by,
      });
  }
  return out;
}

/** The search as of a past instant: exact ranking over the beliefs of that instant (nearestAsOf), each row as it stood then. */
export async function searchAsOf(
  db: Db,
  fleet: string,
  at: Date,
  a: { vector: string; k: number; includeRetracted: boolean; prefix: string | null },
) {
  const near = (await nearestAsOf(fleet, at, a).execute(db)).rows;
  const rows = new Map(
    (
      await beliefsAsOf(
        db,
        fleet,
        near.map((h) => String(h.id)),
        at,
      )
    ).map((r) => [r.id, r]),
  );
  return { hits: near.map((h) => ({ belief: rows.get(String(h.id))! as BeliefRow, score: 1 - Number(h.distance) })) };
}
