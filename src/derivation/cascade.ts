import { sql } from 'kysely';
import type { Tx } from '../store/tx';
import { type SupportRow, settle } from './settle';

/**
 * The JTMS cascade in a constant number of statements, whatever the depth of the blast radius.
 *
 * 1. One statement reads the closure: every ACTIVE, non-grounded belief reachable from the root
 *    through justification premises (a recursive walk that stops at grounded and non-ACTIVE
 *    beliefs, which cannot fall), with each of its justifications and each premise's status.
 * 2. `settle` (./settle.ts) computes in memory which of them fall and at which level, exactly as a
 *    level-by-level evaluation would; survivors and what rests only on them stay.
 * 3. One statement marks the fallen beliefs with the retraction and their level, and writes their
 *    BeliefRetracted event rows in cascade order (`eventRows`: whole levels, small ones together).
 *
 * The walk visits each edge of the closure once (UNION keeps one row per belief), and every lookup
 * goes through an index on the id it follows: cost grows with the blast radius, not with the store
 * nor with the depth. One statement per level cost a round trip and a plan per level: a 10,000-deep
 * chain took 66× the bare closure + UPDATE on PostgreSQL.
 */
export async function cascade(tx: Tx, fleet: string, retractionId: string, rootId: string, actorId: string): Promise<number> {
  const { ids, levels } = settle(Number(rootId), await closure(tx, fleet, rootId));
  const events = eventRows(ids, levels);
  // unnest of a sub-select: the planner cannot see the array's length and estimates a few rows, so
  // it probes the primary key per fallen belief instead of hashing the whole table (a seq scan of
  // every belief of the store would tie the cost to the store's size).
  const r = await sql<{ n: number }>`
    WITH fell AS (
      UPDATE beliefs b SET status = 'RETRACTED', retraction_id = ${retractionId}, retraction_depth = f.depth, retracted_at = now()
        FROM unnest((SELECT ${intArray(ids)}::bigint[]), (SELECT ${intArray(levels)}::int[])) AS f(id, depth)
       WHERE b.id = f.id AND b.fleet_id = ${fleet} AND b.status = 'ACTIVE'
      RETURNING b.id
    ), ev AS (
      INSERT INTO events (fleet_id, type, retraction_id, depth, ids, data, actor_id)
      SELECT ${fleet}, 'BeliefRetracted', ${retractionId}, e.depth, e.ids::bigint[],
             CASE WHEN e.sizes IS NULL THEN NULL ELSE jsonb_build_object('levels', e.sizes::jsonb) END, ${actorId}
        FROM unnest(${intArray(events.depth)}::int[], ${textArray(events.ids)}::text[], ${textArray(events.sizes)}::text[]) WITH ORDINALITY AS e(depth, ids, sizes, ord)
       ORDER BY e.ord
    )
    SELECT count(*)::int AS n FROM fell`.execute(tx);
  const n = r.rows[0]!.n;
  // The closure was read in this transaction's snapshot; a concurrent change that slipped between
  // the two statements would have failed the transaction, so a shortfall is a bug, never a race.
  if (n !== ids.length) throw new Error(`cascade: ${ids.length} beliefs settled to fall but ${n} were ACTIVE to mark`);
  return n;
}

/** Statement 1 of the cascade: the closure below the root, one row per premise edge of each justification. */
async function closure(tx: Tx, fleet: string, rootId: string): Promise<SupportRow[]> {
  const r = await sql<{ b: string; j: string; p: string | null; up: boolean | null }>`
    WITH RECURSIVE closure(id) AS (
      SELECT ${rootId}::bigint
      UNION
      SELECT j.belief_id
        FROM closure c
        JOIN justification_premises p ON p.premise_id = c.id AND p.fleet_id = ${fleet}
        JOIN justifications j ON j.id = p.justification_id AND j.fleet_id = ${fleet}
        JOIN beliefs b ON b.id = j.belief_id AND b.fleet_id = ${fleet}
       WHERE b.status = 'ACTIVE' AND NOT b.grounded
    )
    SELECT j.belief_id::text AS b, j.id::text AS j, p.premise_id::text AS p,
           (SELECT pb.status = 'ACTIVE' FROM beliefs pb WHERE pb.id = p.premise_id) AS up
      FROM closure c
      JOIN justifications j ON j.belief_id = c.id AND j.fleet_id = ${fleet}
      LEFT JOIN justification_premises p ON p.justification_id = j.id AND p.fleet_id = ${fleet}
     WHERE c.id <> ${rootId}::bigint`.execute(tx);
  return r.rows.map((x) => ({ belief: Number(x.b), justification: Number(x.j), premise: x.p === null ? null : Number(x.p), premiseActive: x.up === true }));
}

/**
 * The BeliefRetracted rows of a cascade, in cascade order: consecutive levels share a row up to
 * LEVEL_ROW ids, and a bigger level has a row of its own. A row's `depth` is its first level; a row
 * of several levels lists their sizes (`data.levels`), so every id's level can be read back. Rows,
 * not levels, cost the statement (three foreign keys checked per row): a 100,000-deep chain is 200
 * rows, not 100,000.
 */
export function eventRows(ids: readonly number[], levels: readonly number[]): { depth: number[]; ids: string[]; sizes: Array<string | null> } {
  const out = { depth: [] as number[], ids: [] as string[], sizes: [] as Array<string | null> };
  let start = 0;
  const flush = (end: number, sizes: number[]) => {
    if (end === start) return;
    out.depth.push(levels[start]!);
    out.ids.push(intArray(ids.slice(start, end)));
    out.sizes.push(sizes.length > 1 ? `[${sizes.join(',')}]` : null);
    start = end;
  };
  let sizes: number[] = [];
  for (let i = 0; i < ids.length; ) {
    let e = i;
    while (e < ids.length && levels[e] === levels[i]) e++;
    if (e - start > LEVEL_ROW && i > start) {
      flush(i, sizes);
      sizes = [];
    }
    sizes.push(e - i);
    i = e;
  }
  flush(ids.length, sizes);
  return out;
}

/** Most ids in an event row that holds several levels (a subscription's LEVEL batch is the same size). */
const LEVEL_ROW = 500;

/** A PostgreSQL array literal of integers: one text parameter, however many elements. */
function intArray(xs: readonly number[]): string {
  return `{${xs.join(',')}}`;
}

/** A PostgreSQL text[] literal of elements that need no escaping inside double quotes (digits, commas, brackets); null as NULL. */
function textArray(xs: ReadonlyArray<string | null>): string {
  return `{${xs.map((x) => (x === null ? 'NULL' : `"${x}"`)).join(',')}}`;
}

/**
 * After the beliefs fell: cancel PENDING effects resting on any of them, mark EXECUTING ones as
 * reached (completeEffect records their reversal), and record one reversal per EXECUTED one —
 * OWED under `reversal:` + the effect's key, or UNREACHABLE when its kind is not reversible. An
 * effect already reversed by an earlier retraction keeps its one reversal (ON CONFLICT DO NOTHING).
 */
export async function reachEffects(tx: Tx, fleet: string, retractionId: string, actorId: string): Promise<void> {
  await sql`
    WITH cancelled AS (
      UPDATE effects e SET status = 'CANCELLED', cancelled_by = ${retractionId}, cancelled_at = now()
       WHERE e.status = 'PENDING'
         AND e.id IN (SELECT s.effect_id FROM effect_supports s JOIN beliefs b ON b.id = s.belief_id WHERE b.retraction_id = ${retractionId})
      RETURNING e.id
    )
    INSERT INTO events (fleet_id, type, retraction_id, ids, actor_id)
    SELECT ${fleet}, 'EffectCancelled', ${retractionId}, array_agg(id ORDER BY id), ${actorId} FROM cancelled HAVING count(*) > 0`.execute(tx);

  await sql`
    UPDATE effects e SET reached_by = ${retractionId}
     WHERE e.status = 'EXECUTING' AND e.reached_by IS NULL
       AND e.id IN (SELECT s.effect_id FROM effect_supports s JOIN beliefs b ON b.id = s.belief_id WHERE b.retraction_id = ${retractionId})`.execute(tx);

  await recordReversals(tx, fleet, retractionId, actorId, sql`
    SELECT s.effect_id FROM effect_supports s JOIN beliefs b ON b.id = s.belief_id WHERE b.retraction_id = ${retractionId}`);
}

/**
 * Records the reversal of every EXECUTED effect among `effectIds` (a subquery) under `retractionId`,
 * at most once per effect (a VOIDED one is owed again), and appends one ReversalRecorded event row for those it recorded.
 */
export async function recordReversals(tx: Tx, fleet: string, retractionId: string, actorId: string | null, effectIds: ReturnType<typeof sql>): Promise<number> {
  const r = await sql<{ n: number }>`
    WITH recorded AS (
      INSERT INTO reversals (fleet_id, effect_id, retraction_id, status, idempotency_key, amount_minor, currency, reason)
      SELECT e.fleet_id, e.id, ${retractionId},
             CASE WHEN k.reversible THEN 'OWED' ELSE 'UNREACHABLE' END,
             ${sql.raw(REVERSAL_KEY_SQL)},
             e.amount_minor, e.currency,
             CASE WHEN k.reversible THEN NULL ELSE 'effect kind ' || e.kind || ' has no compensation handler' END
        FROM effects e JOIN effect_kinds k ON k.fleet_id = e.fleet_id AND k.kind = e.kind
       WHERE e.status = 'EXECUTED' AND e.id IN (${effectIds})
       ORDER BY e.id
      -- A reversal VOIDED by a reinstatement is owed again when a later retraction reaches its effect:
      -- still one reversal per effect, under the one key.
      ON CONFLICT (effect_id) DO UPDATE SET status = EXCLUDED.status, retraction_id = EXCLUDED.retraction_id, reason = EXCLUDED.reason,
        lease_expires_at = NULL WHERE reversals.status = 'VOIDED'
      RETURNING id
    ), ev AS (
      INSERT INTO events (fleet_id, type, retraction_id, ids, actor_id)
      SELECT ${fleet}, 'ReversalRecorded', ${retractionId}, array_agg(id ORDER BY id), ${actorId} FROM recorded HAVING count(*) > 0
    )
    SELECT count(*)::int AS n FROM recorded`.execute(tx);
  return r.rows[0]!.n;
}

/** The reversal key as SQL over `e.idempotency_key`; must equal `reversalKey` below. */
const REVERSAL_KEY_SQL = `'reversal:' || e.idempotency_key`;

/** The reversal's idempotency key: a pure function of the effect's key, so every path lands on the same one. */
export function reversalKey(effectIdempotencyKey: string): string {
  return `reversal:${effectIdempotencyKey}`;
}

/** Beliefs that rest on something this retraction took down but still stand (another justification holds, or grounded). */
export async function survivorIds(tx: Tx, retractionId: string, limit: number): Promise<string[]> {
  const r = await sql<{ id: string }>`
    SELECT s.id::text AS id FROM (
      SELECT DISTINCT j.belief_id AS id
        FROM beliefs f
        JOIN justification_premises p ON p.premise_id = f.id
        JOIN justifications j ON j.id = p.justification_id
        JOIN beliefs b ON b.id = j.belief_id
       WHERE f.retraction_id = ${retractionId} AND b.status = 'ACTIVE') s
     ORDER BY s.id LIMIT ${limit}`.execute(tx);
  return r.rows.map((x) => x.id);
}
