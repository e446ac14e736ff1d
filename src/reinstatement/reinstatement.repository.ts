import { type Selectable, sql } from 'kysely';
import { DomainError } from '../errors/domain-error';
import type { Money } from '../kernel/money';
import type { ReverseRow } from '../derivation/resettle';
import type { ReinstatementMoneyTable, ReinstatementTable } from '../store/schema';
import type { Db, Tx } from '../store/tx';
import { reinstatedIntervals } from '../belief/belief-history.repository';

/**
 * Every statement of reinstatement: the receipt row, the reverse closure, bringing beliefs back,
 * the money lines, restorable effects. Each names its fleet on every relation it touches.
 */

export type ReinstatementRow = Selectable<ReinstatementTable>;
export type MoneyLineRow = Selectable<ReinstatementMoneyTable>;

const COLUMNS = sql`id::text AS id, fleet_id, retraction_id::text AS retraction_id, status, reason, actor_id::text AS actor_id,
  contradiction_id::text AS contradiction_id, belief_ids::text[] AS belief_ids, belief_depths, restorable_effect_ids::text[] AS restorable_effect_ids,
  contradiction_ids::text[] AS contradiction_ids, created_at, completed_at`;

export async function reinstatementsByIds(db: Db, fleet: string, ids: readonly string[]): Promise<ReinstatementRow[]> {
  if (ids.length === 0) return [];
  return (
    await sql<ReinstatementRow>`SELECT ${COLUMNS} FROM reinstatements WHERE fleet_id = ${fleet} AND id = ANY(${ids as string[]}::bigint[])`.execute(
      db,
    )
  ).rows;
}

/** The reinstatement of a retraction, locked, if there is one. */
export async function lockReinstatementOf(
  tx: Tx,
  fleet: string,
  retractionId: string,
): Promise<ReinstatementRow | undefined> {
  return (
    await sql<ReinstatementRow>`SELECT ${COLUMNS} FROM reinstatements WHERE fleet_id = ${fleet} AND retraction_id = ${retractionId} FOR UPDATE`.execute(
      tx,
    )
  ).rows[0];
}

/** The retraction to reinstate, locked (FOR UPDATE): root and whether it was already taken back. */
export async function lockRetraction(
  tx: Tx,
  fleet: string,
  retractionId: string,
): Promise<{ id: string; root_id: string; reinstated_at: Date | null } | undefined> {
  return (
    await sql<{ id: string; root_id: string; reinstated_at: Date | null }>`
    SELECT id::text AS id, root_id::text AS root_id, reinstated_at FROM retractions WHERE fleet_id = ${fleet} AND id = ${retractionId} FOR UPDATE`.execute(
      tx,
    )
  ).rows[0];
}

export async function insertReinstatement(
  tx: Tx,
  fleet: string,
  r: { retractionId: string; reason: string; actorId: string },
): Promise<string> {
  // Written BLOCKED-free: the status is set by completeReinstatement or blockReinstatement in the same transaction.
  const row = await sql<{ id: string }>`
    INSERT INTO reinstatements (fleet_id, retraction_id, status, reason, actor_id, completed_at)
    VALUES (${fleet}, ${r.retractionId}, 'REINSTATED', ${r.reason}, ${r.actorId}, now())
    RETURNING id::text AS id`.execute(tx);
  return row.rows[0]!.id;
}

/** Receipts newest first (of one retraction when named), below `before` (an id) when given; all of them when `first` is null. */
export async function reinstatementPage(
  db: Db,
  fleet: string,
  q: { retractionId?: string; first: number | null; before: string | null },
): Promise<ReinstatementRow[]> {
  return (
    await sql<ReinstatementRow>`
    SELECT ${COLUMNS} FROM reinstatements WHERE fleet_id = ${fleet}
       ${q.retractionId ? sql`AND retraction_id = ${q.retractionId}` : sql``}
       ${q.before ? sql`AND id < ${q.before}::bigint` : sql``}
     ORDER BY reinstatements.id DESC ${q.first === null ? sql`` : sql`LIMIT ${q.first}`}`.execute(db)
  ).rows;
}

/** The claim's ACTIVE belief, if any, other than `beliefId` (whose claim it shares). */
export async function activeRivalOf(
  tx: Tx,
  fleet: string,
  beliefId: string,
): Promise<{ id: string; claim_key: string } | undefined> {
  return (
    await sql<{ id: string; claim_key: string }>`
    SELECT a.id::text AS id, a.claim_key FROM beliefs b
      JOIN beliefs a ON a.fleet_id = b.fleet_id AND a.claim_key = b.claim_key AND a.status = 'ACTIVE' AND a.id <> b.id
     WHERE b.fleet_id = ${fleet} AND b.id = ${beliefId}`.execute(tx)
  ).rows[0];
}

/**
 * Statement 1 of the reverse cascade: for every belief still down under this retraction (the root
 * left out), each justification with each premise's state, and whether its claim now holds another
 * ACTIVE belief. One read through the retraction's index, whatever the depth.
 */
export async function reverseClosure(
  tx: Tx,
  fleet: string,
  retractionId: string,
  rootId: string,
): Promise<{ rows: ReverseRow[]; blocked: Set<number> }> {
  const r = await sql<{
    b: string;
    j: string;
    p: string | null;
    st: 'set' | 'active' | 'down' | null;
    blocked: boolean;
  }>`
    WITH down AS MATERIALIZED (
      SELECT s.id, EXISTS (SELECT 1 FROM beliefs a WHERE a.fleet_id = ${fleet} AND a.claim_key = s.claim_key AND a.status = 'ACTIVE') AS blocked
        FROM beliefs s WHERE s.fleet_id = ${fleet} AND s.retraction_id = ${retractionId} AND s.id <> ${rootId}::bigint
    )
    SELECT d.id::text AS b, j.id::text AS j, p.premise_id::text AS p, d.blocked,
           CASE WHEN p.premise_id IS NULL THEN NULL WHEN pb.status = 'ACTIVE' THEN 'active' WHEN pb.retraction_id = ${retractionId} THEN 'set' ELSE 'down' END AS st
      FROM down d
      JOIN justifications j ON j.fleet_id = ${fleet} AND j.belief_id = d.id
      LEFT JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
      LEFT JOIN beliefs pb ON pb.fleet_id = p.fleet_id AND pb.id = p.premise_id`.execute(tx);
  const blocked = new Set<number>();
  const rows = r.rows.map((x) => {
    if (x.blocked) blocked.add(Number(x.b));
    return {
      belief: Number(x.b),
      justification: Number(x.j),
      premise: x.p === null ? null : Number(x.p),
      state: x.st ?? 'active',
    };
  });
  return { rows, blocked };
}

/** The root's justifications, each as its premises' states (an empty list: a justification without premises). */
export async function reverseClosureOfRoot(
  tx: Tx,
  fleet: string,
  rootId: string,
): Promise<{ rows: Array<Array<{ premise: string; state: 'active' | 'down' }>> }> {
  const r = await sql<{ j: string; p: string | null; active: boolean | null }>`
    SELECT j.id::text AS j, p.premise_id::text AS p, pb.status = 'ACTIVE' AS active
      FROM justifications j
      LEFT JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
      LEFT JOIN beliefs pb ON pb.fleet_id = p.fleet_id AND pb.id = p.premise_id
     WHERE j.fleet_id = ${fleet} AND j.belief_id = ${rootId}
     ORDER BY j.id, p.premise_id`.execute(tx);
  const by = new Map<string, Array<{ premise: string; state: 'active' | 'down' }>>();
  for (const x of r.rows) {
    const list = by.get(x.j) ?? [];
    by.set(x.j, list);
    if (x.p !== null) list.push({ premise: x.p, state: x.active ? 'active' : 'down' });
  }
  return { rows: [...by.values()] };
}

/**
 * Statement 2: the beliefs come back ACTIVE (only those still down under this retraction), their
 * BeliefReinstated event rows are written in order, and the receipt gains them: one statement.
 */
export async function bringBack(
  tx: Tx,
  fleet: string,
  reinstatementId: string,
  retractionId: string,
  actorId: string,
  ids: readonly number[],
  levels: readonly number[],
  events: { depth: number[]; ids: string[]; sizes: Array<string | null> },
): Promise<number> {
  // history: the RETRACTED interval each one leaves, closed now (belief-history.repository.ts). It reads the rows as
  // they were before this statement (every part of one statement does) and runs though nothing selects from it.
  const r = await sql<{ n: number }>`
    WITH history AS (
      ${reinstatedIntervals(fleet, { reinstatementId, retractionId, actorId, ids: sql`(SELECT ${intArray(ids)}::bigint[])` })}
    ), up AS (
      UPDATE beliefs b SET status = 'ACTIVE', retraction_id = NULL, retraction_depth = NULL, retracted_at = NULL
        FROM unnest((SELECT ${intArray(ids)}::bigint[])) AS f(id)
       WHERE b.fleet_id = ${fleet} AND b.id = f.id AND b.retraction_id = ${retractionId}
      RETURNING b.id
    ), ev AS (
      INSERT INTO events (fleet_id, type, retraction_id, depth, ids, data, actor_id)
      SELECT ${fleet}, 'BeliefReinstated', ${retractionId}, e.depth, e.ids::bigint[],
             jsonb_build_object('reinstatementId', ${reinstatementId}::text) || CASE WHEN e.sizes IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('levels', e.sizes::jsonb) END,
             ${actorId}
        FROM unnest(${intArray(events.depth)}::int[], ${textArray(events.ids)}::text[], ${textArray(events.sizes)}::text[]) WITH ORDINALITY AS e(depth, ids, sizes, ord)
       ORDER BY e.ord
      RETURNING seq
    ), receipt AS (
      UPDATE reinstatements SET belief_ids = belief_ids || ${intArray(ids)}::bigint[], belief_depths = belief_depths || ${intArray(levels)}::int[]
       WHERE fleet_id = ${fleet} AND id = ${reinstatementId}
    )
    SELECT count(*)::int AS n FROM up`.execute(tx);
  return r.rows[0]!.n;
}

export async function markRetractionReinstated(tx: Tx, fleet: string, retractionId: string): Promise<void> {
  await sql`UPDATE retractions SET reinstated_at = now() WHERE fleet_id = ${fleet} AND id = ${retractionId}`.execute(
    tx,
  );
}

export async function setBlocked(
  tx: Tx,
  fleet: string,
  reinstatementId: string,
  contradictionId: string | null,
): Promise<void> {
  await sql`UPDATE reinstatements SET status = ${contradictionId ? 'BLOCKED' : 'REINSTATED'}, contradiction_id = ${contradictionId},
    completed_at = ${contradictionId ? null : sql`now()`} WHERE fleet_id = ${fleet} AND id = ${reinstatementId}`.execute(
    tx,
  );
}

/**
 * A contradiction for each retracted belief that would come back but whose claim holds another
 * ACTIVE belief: the retracted belief is the proposal (its statement, value, evidence, author, and
 * the premises of the justification that holds), the ACTIVE one the existing side. One statement.
 */
export async function raiseContradictions(
  tx: Tx,
  fleet: string,
  reinstatementId: string,
  actorId: string,
  items: ReadonlyArray<{ belief: number; premises: number[] }>,
): Promise<string[]> {
  if (items.length === 0) return [];
  const r = await sql<{ id: string }>`
    WITH raised AS (
      INSERT INTO contradictions (fleet_id, claim_key, existing_id, proposed_statement, proposed_value, proposed_evidence, proposed_author_id,
                                  proposed_derived_from, reinstatement_id, reinstates_id)
      SELECT ${fleet}, s.claim_key, a.id, s.statement, s.value, s.evidence, s.author_id, x.premises::bigint[], ${reinstatementId}, s.id
        FROM unnest(${intArray(items.map((i) => i.belief))}::bigint[], ${textArray(items.map((i) => intArray(i.premises)))}::text[]) WITH ORDINALITY AS x(id, premises, ord)
        JOIN beliefs s ON s.fleet_id = ${fleet} AND s.id = x.id
        JOIN beliefs a ON a.fleet_id = s.fleet_id AND a.claim_key = s.claim_key AND a.status = 'ACTIVE'
       ORDER BY x.ord
      RETURNING id, claim_key
    ), ev AS (
      INSERT INTO events (fleet_id, type, ids, data, actor_id)
      SELECT ${fleet}, 'ContradictionRaised', ARRAY[id], jsonb_build_object('claimKey', claim_key, 'reinstatementId', ${reinstatementId}::text), ${actorId} FROM raised
      RETURNING seq
    ), receipt AS (
      UPDATE reinstatements SET contradiction_ids = contradiction_ids || (SELECT array_agg(id ORDER BY id) FROM raised)
       WHERE fleet_id = ${fleet} AND id = ${reinstatementId}
    )
    SELECT id::text AS id FROM raised ORDER BY raised.id`.execute(tx);
  return r.rows.map((x) => x.id);
}

/**
 * The money of what came back: every reversal of an effect resting on a belief brought back now
 * and on no belief still RETRACTED. OWED (never sent) and UNREACHABLE become VOIDED; DISPATCHED and
 * FAILED are watched (IN_FLIGHT: the provider's answer decides); CONFIRMED is re-execution owed
 * under 'reexecution:' + its key. One line each on the receipt, one ReversalVoided event row.
 * EXECUTING effects reached by this retraction are reached by none now, or by the first
 * retraction still holding one of their supports down (completeEffect records its reversal there).
 */
export async function settleMoney(
  tx: Tx,
  fleet: string,
  reinstatementId: string,
  retractionId: string,
  actorId: string,
  ids: readonly number[],
): Promise<void> {
  await sql`
    WITH touched AS MATERIALIZED (
      SELECT DISTINCT s.effect_id FROM effect_supports s
       WHERE s.fleet_id = ${fleet} AND s.belief_id IN (SELECT unnest(${intArray(ids)}::bigint[]))
         AND NOT EXISTS (SELECT 1 FROM effect_supports o JOIN beliefs b ON b.fleet_id = o.fleet_id AND b.id = o.belief_id
                          WHERE o.fleet_id = ${fleet} AND o.effect_id = s.effect_id AND b.status <> 'ACTIVE')
    ), lines AS (
      INSERT INTO reinstatement_money (fleet_id, reinstatement_id, reversal_id, effect_id, line, prior_status, amount_minor, currency, reexecution_key)
      SELECT ${fleet}, ${reinstatementId}, r.id, r.effect_id,
             CASE r.status WHEN 'CONFIRMED' THEN 'REEXECUTION_OWED' WHEN 'DISPATCHED' THEN 'IN_FLIGHT' WHEN 'FAILED' THEN 'IN_FLIGHT' ELSE 'VOIDED' END,
             r.status, r.amount_minor, r.currency,
             CASE WHEN r.status = 'CONFIRMED' THEN ${sql.raw(REEXECUTION_KEY_SQL)} END
        FROM reversals r JOIN touched t ON r.effect_id = t.effect_id
       WHERE r.fleet_id = ${fleet} AND r.status <> 'VOIDED'
       ORDER BY r.id
      ON CONFLICT DO NOTHING
      RETURNING reversal_id, line
    ), voided AS (
      UPDATE reversals r SET status = 'VOIDED', lease_expires_at = NULL
        FROM lines l WHERE r.fleet_id = ${fleet} AND r.id = l.reversal_id AND l.line = 'VOIDED'
      RETURNING r.id
    ), ev AS (
      INSERT INTO events (fleet_id, type, retraction_id, ids, data, actor_id)
      SELECT ${fleet}, 'ReversalVoided', ${retractionId}, array_agg(id ORDER BY id), jsonb_build_object('reinstatementId', ${reinstatementId}::text), ${actorId}
        FROM voided HAVING count(*) > 0
      RETURNING seq
    )
    UPDATE effects e SET reached_by = (
             SELECT min(b.retraction_id) FROM effect_supports o JOIN beliefs b ON b.fleet_id = o.fleet_id AND b.id = o.belief_id
              WHERE o.fleet_id = ${fleet} AND o.effect_id = e.id AND b.status = 'RETRACTED')
     WHERE e.fleet_id = ${fleet} AND e.reached_by = ${retractionId} AND e.status = 'EXECUTING'`.execute(tx);
}

/** PENDING effects this retraction cancelled whose supports are all ACTIVE again: the receipt lists them as restorable. */
export async function recordRestorable(
  tx: Tx,
  fleet: string,
  reinstatementId: string,
  retractionId: string,
): Promise<void> {
  await sql`
    UPDATE reinstatements SET restorable_effect_ids = coalesce((
      SELECT array_agg(e.id ORDER BY e.id) FROM effects e
       WHERE e.fleet_id = ${fleet} AND e.cancelled_by = ${retractionId} AND e.status = 'CANCELLED'
         AND NOT EXISTS (SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
                          WHERE s.fleet_id = ${fleet} AND s.effect_id = e.id AND b.status <> 'ACTIVE')), '{}')
     WHERE fleet_id = ${fleet} AND id = ${reinstatementId}`.execute(tx);
}

/** The key a re-execution is owed under: a pure function of the reversal's key (itself of the effect's). */
const REEXECUTION_KEY_SQL = `'reexecution:' || r.idempotency_key`;

export async function moneyLines(db: Db, fleet: string, reinstatementId: string): Promise<MoneyLineRow[]> {
  return (
    await sql<MoneyLineRow>`
    SELECT fleet_id, reinstatement_id::text AS reinstatement_id, reversal_id::text AS reversal_id, effect_id::text AS effect_id, line, prior_status,
           amount_minor::text AS amount_minor, currency, reexecution_key, outcome, outcome_at, created_at
      FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = ${reinstatementId}
     ORDER BY m.reversal_id`.execute(db)
  ).rows; // the column, not the ::text output name ("10" sorts before "9")
}

export interface ReinstatementTotals {
  beliefsReinstated: number;
  contradictionsRaised: number;
  reversalsVoided: number;
  reversalsInFlight: number;
  reexecutionsOwed: number;
  effectsRestorable: number;
  effectsRestored: number;
  voided: Money[];
  inFlight: Money[];
  reexecutionOwed: Money[];
}

/**
 * A reinstatement's figures from its own rows: counts and per-currency sums of its money lines
 * (every currency a line carries appears in each sum, 0 when none).
 */
export async function reinstatementTotals(
  db: Db,
  fleet: string,
  reinstatementId: string,
): Promise<ReinstatementTotals> {
  const r = await sql<{
    beliefs: number;
    contradictions: number;
    restorable: number;
    restored: number;
    voided: number;
    in_flight: number;
    owed: number;
    money: Array<{ currency: string; voided: string; in_flight: string; owed: string }> | null;
  }>`
    SELECT cardinality(i.belief_ids) AS beliefs, cardinality(i.contradiction_ids) AS contradictions, cardinality(i.restorable_effect_ids) AS restorable,
           (SELECT count(*)::int FROM effects e WHERE e.fleet_id = ${fleet} AND e.restored_by = i.id) AS restored,
           (SELECT count(*)::int FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = i.id AND m.line = 'VOIDED') AS voided,
           (SELECT count(*)::int FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = i.id AND m.line = 'IN_FLIGHT') AS in_flight,
           (SELECT count(*)::int FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = i.id AND m.line = 'REEXECUTION_OWED') AS owed,
           (SELECT json_agg(x ORDER BY x.currency) FROM (
              SELECT currency,
                     coalesce(sum(amount_minor) FILTER (WHERE line = 'VOIDED'), 0)::text AS voided,
                     coalesce(sum(amount_minor) FILTER (WHERE line = 'IN_FLIGHT'), 0)::text AS in_flight,
                     coalesce(sum(amount_minor) FILTER (WHERE line = 'REEXECUTION_OWED'), 0)::text AS owed
                FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = i.id AND currency IS NOT NULL GROUP BY currency) x) AS money
      FROM reinstatements i WHERE i.fleet_id = ${fleet} AND i.id = ${reinstatementId}`.execute(db);
  const row = r.rows[0];
  if (!row) throw new Error(`reinstatement ${reinstatementId} vanished`);
  const money = row.money ?? [];
  const pick = (k: 'voided' | 'in_flight' | 'owed') => money.map((m) => ({ amountMinor: m[k], currency: m.currency }));
  return {
    beliefsReinstated: row.beliefs,
    contradictionsRaised: row.contradictions,
    reversalsVoided: row.voided,
    reversalsInFlight: row.in_flight,
    reexecutionsOwed: row.owed,
    effectsRestorable: row.restorable,
    effectsRestored: row.restored,
    voided: pick('voided'),
    inFlight: pick('in_flight'),
    reexecutionOwed: pick('owed'),
  };
}

/** Reinstated beliefs, in reverse-cascade order, as a page of (position, id, depth). */
export async function reinstatedBeliefPage(
  db: Db,
  fleet: string,
  reinstatementId: string,
  first: number,
  afterPos: number,
): Promise<Array<{ pos: number; id: string; depth: number }>> {
  return (
    await sql<{ pos: number; id: string; depth: number }>`
    SELECT x.pos::int AS pos, x.id::text AS id, x.depth FROM reinstatements i,
           unnest(i.belief_ids, i.belief_depths) WITH ORDINALITY AS x(id, depth, pos)
     WHERE i.fleet_id = ${fleet} AND i.id = ${reinstatementId} AND x.pos > ${afterPos}
     ORDER BY x.pos LIMIT ${first}`.execute(db)
  ).rows;
}

/**
 * A watched reversal's provider answer, recorded on the line that watches it: CONFIRMED makes the
 * line re-execution owed (the money came back after all); FAILED voids it and the reversal (nothing
 * moved, nothing is owed). No line, nothing happens. Returns the lines changed.
 */
export async function recordWatchedOutcome(
  tx: Tx,
  fleet: string,
  actorId: string | null,
  reversalId: string,
  outcome: 'CONFIRMED' | 'FAILED',
): Promise<number> {
  if (outcome === 'CONFIRMED') {
    const r = await sql<{ n: number }>`
      WITH changed AS (
        UPDATE reinstatement_money m SET line = 'REEXECUTION_OWED', outcome = 'CONFIRMED', outcome_at = now(),
               reexecution_key = (SELECT ${sql.raw(REEXECUTION_KEY_SQL)} FROM reversals r WHERE r.fleet_id = ${fleet} AND r.id = m.reversal_id)
         WHERE m.fleet_id = ${fleet} AND m.reversal_id = ${reversalId} AND m.line = 'IN_FLIGHT'
        RETURNING 1)
      SELECT count(*)::int AS n FROM changed`.execute(tx);
    return r.rows[0]!.n;
  }
  const r = await sql<{ n: number; retraction_id: string | null; reinstatement_id: string | null }>`
    WITH changed AS (
      UPDATE reinstatement_money m SET line = 'VOIDED', outcome = 'FAILED', outcome_at = now()
       WHERE m.fleet_id = ${fleet} AND m.reversal_id = ${reversalId} AND m.line = 'IN_FLIGHT'
      RETURNING m.reinstatement_id
    ), voided AS (
      UPDATE reversals r SET status = 'VOIDED', lease_expires_at = NULL
       WHERE r.fleet_id = ${fleet} AND r.id = ${reversalId} AND EXISTS (SELECT 1 FROM changed)
      RETURNING r.retraction_id
    )
    SELECT (SELECT count(*)::int FROM changed) AS n, (SELECT retraction_id::text FROM voided) AS retraction_id,
           (SELECT reinstatement_id::text FROM changed LIMIT 1) AS reinstatement_id`.execute(tx);
  const row = r.rows[0]!;
  if (row.n > 0 && row.retraction_id) {
    await sql`INSERT INTO events (fleet_id, type, retraction_id, ids, data, actor_id)
      VALUES (${fleet}, 'ReversalVoided', ${row.retraction_id}, ARRAY[${reversalId}::bigint], jsonb_build_object('reinstatementId', ${row.reinstatement_id}::text, 'outcome', 'FAILED'), ${actorId})`.execute(
      tx,
    );
  }
  return row.n;
}

/** The refusal of a confirmation for a VOIDED reversal: nothing was sent, nothing is owed. */
export function voidedConflict(reversalId: string): DomainError {
  return new DomainError(
    'CONFLICT',
    `reversalId: reversal ${reversalId} is VOIDED: a reinstatement took its retraction back, so nothing is owed; reconcile a provider's payment by hand`,
    'reversalId',
  );
}

/**
 * restoreEffect's write: a CANCELLED effect listed as restorable by a completed reinstatement
 * becomes PENDING again under its own key, when every support is ACTIVE. Returns the reinstatement
 * that lists it and the support that is down, if any.
 */
export async function restorableBy(
  tx: Tx,
  fleet: string,
  effectId: string,
): Promise<{ reinstatement_id: string; retraction_id: string } | undefined> {
  return (
    await sql<{ reinstatement_id: string; retraction_id: string }>`
    SELECT i.id::text AS reinstatement_id, i.retraction_id::text AS retraction_id FROM effects e
      JOIN reinstatements i ON i.fleet_id = e.fleet_id AND i.retraction_id = e.cancelled_by AND i.status = 'REINSTATED'
     WHERE e.fleet_id = ${fleet} AND e.id = ${effectId} AND e.id = ANY(i.restorable_effect_ids)`.execute(tx)
  ).rows[0];
}

export async function firstDownSupport(tx: Tx, fleet: string, effectId: string): Promise<string | null> {
  return (
    (
      await sql<{ id: string }>`
    SELECT b.id::text AS id FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
     WHERE s.fleet_id = ${fleet} AND s.effect_id = ${effectId} AND b.status <> 'ACTIVE' ORDER BY b.id LIMIT 1`.execute(
        tx,
      )
    ).rows[0]?.id ?? null
  );
}

export async function restore(
  tx: Tx,
  fleet: string,
  effectId: string,
  reinstatementId: string,
  retractionId: string,
  actorId: string,
): Promise<void> {
  await sql`
    WITH restored AS (
      UPDATE effects SET status = 'PENDING', cancelled_by = NULL, cancelled_at = NULL, restored_by = ${reinstatementId}
       WHERE fleet_id = ${fleet} AND id = ${effectId} AND status = 'CANCELLED'
      RETURNING id)
    INSERT INTO events (fleet_id, type, retraction_id, ids, data, actor_id)
    SELECT ${fleet}, 'EffectRestored', ${retractionId}, ARRAY[id], jsonb_build_object('reinstatementId', ${reinstatementId}::text), ${actorId} FROM restored
    RETURNING seq`.execute(tx);
}

function intArray(xs: readonly number[]): string {
  return `{${xs.join(',')}}`;
}

function textArray(xs: ReadonlyArray<string | null>): string {
  return `{${xs.map((x) => (x === null ? 'NULL' : `"${x}"`)).join(',')}}`;
}
