import { sql } from 'kysely';
import type { Tx } from '../store/tx';

/**
 * The JTMS fixpoint, set-at-a-time: one statement per depth level.
 *
 * Level 0 is the root. A belief falls at level d when it is a dependent of something that fell at
 * level d-1, it is not grounded (asserted on outside evidence), and none of its justifications still
 * holds (every justification has at least one premise that is not ACTIVE). Beliefs that fall mark
 * themselves with the retraction and their depth, and one event row per level records them in
 * cascade order. Cost follows the blast radius: each level touches only the previous level's
 * dependents, through the premise index, whatever the size of the store.
 *
 * The dependents are collected into an array first (an InitPlan) that the UPDATE takes its rows
 * from. Joined as a CTE instead, a graph bulk-loaded and not yet analyzed (every table estimated at
 * one row) was planned as a nested loop over every ACTIVE belief of the fleet re-scanning the
 * candidates: quadratic, 20k beliefs took 47 s (1.2 s now) and 100k did not finish in five minutes
 * (21 s now, 2.1 s once analyzed: experiments/unanalyzed_cascade.ts). After a bulk load, ANALYZE.
 */
export async function cascade(tx: Tx, fleet: string, retractionId: string, rootId: string, actorId: string): Promise<number> {
  const root = await sql<{ n: number }>`
    WITH fell AS (
      UPDATE beliefs SET status = 'RETRACTED', retraction_id = ${retractionId}, retraction_depth = 0, retracted_at = now()
       WHERE id = ${rootId} AND status = 'ACTIVE'
       RETURNING id
    ), ev AS (
      INSERT INTO events (fleet_id, type, retraction_id, depth, ids, actor_id)
      SELECT ${fleet}, 'BeliefRetracted', ${retractionId}, 0, array_agg(id ORDER BY id), ${actorId} FROM fell HAVING count(*) > 0
    )
    SELECT count(*)::int AS n FROM fell`.execute(tx);
  let total = root.rows[0]!.n;
  for (let depth = 1; ; depth++) {
    const r = await sql<{ n: number }>`
      WITH fell AS (
        UPDATE beliefs b SET status = 'RETRACTED', retraction_id = ${retractionId}, retraction_depth = ${depth}, retracted_at = now()
         WHERE b.id = ANY (ARRAY(
                 SELECT j.belief_id
                   FROM beliefs f
                   JOIN justification_premises p ON p.premise_id = f.id
                   JOIN justifications j ON j.id = p.justification_id
                  WHERE f.retraction_id = ${retractionId} AND f.retraction_depth = ${depth - 1}))
           AND b.status = 'ACTIVE' AND NOT b.grounded
           AND NOT EXISTS (
             SELECT 1 FROM justifications j2
              WHERE j2.belief_id = b.id
                AND NOT EXISTS (
                  SELECT 1 FROM justification_premises p2 JOIN beliefs pb ON pb.id = p2.premise_id
                   WHERE p2.justification_id = j2.id AND pb.status <> 'ACTIVE'))
        RETURNING b.id
      ), ev AS (
        INSERT INTO events (fleet_id, type, retraction_id, depth, ids, actor_id)
        SELECT ${fleet}, 'BeliefRetracted', ${retractionId}, ${depth}, array_agg(id ORDER BY id), ${actorId} FROM fell HAVING count(*) > 0
      )
      SELECT count(*)::int AS n FROM fell`.execute(tx);
    const n = r.rows[0]!.n;
    if (n === 0) return total;
    total += n;
  }
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
 * at most once per effect, and appends one ReversalRecorded event row for those it recorded.
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
      ON CONFLICT (effect_id) DO NOTHING
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
