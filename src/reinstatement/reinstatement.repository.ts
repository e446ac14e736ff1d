import { type RawBuilder, type Selectable, sql } from 'kysely';
import { restoredCount } from '../effect/effect.repository';
import type { Money } from '../kernel/money';
import { moneyLineFigures } from '../reversal/money-line.repository';
import { intArray } from '../store/pg-array';
import type { ReinstatementTable } from '../store/schema';
import type { Db } from '../store/tx';

/**
 * The SQL of reinstatements (the receipts): the row, what it brought back, its figures. It writes only the
 * reinstatements table: every inverse a reinstatement performs lives beside its forward — beliefs back in
 * belief.repository (bringBack, beside markRetracted), the reverse closure in justification.repository, the
 * retraction locked and marked in retraction.repository, contradictions in contradiction.repository, VOIDED
 * reversals and money lines in reversal/, effects reached again and restored in effect.repository. Every
 * statement names its fleet.
 */

export type ReinstatementRow = Selectable<ReinstatementTable>;

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
  db: Db,
  fleet: string,
  retractionId: string,
): Promise<ReinstatementRow | undefined> {
  return (
    await sql<ReinstatementRow>`SELECT ${COLUMNS} FROM reinstatements WHERE fleet_id = ${fleet} AND retraction_id = ${retractionId} FOR UPDATE`.execute(
      db,
    )
  ).rows[0];
}

export async function insertReinstatement(
  db: Db,
  fleet: string,
  r: { retractionId: string; reason: string; actorId: string },
): Promise<string> {
  // Written REINSTATED: setBlocked settles the status in the same transaction.
  const row = await sql<{ id: string }>`
    INSERT INTO reinstatements (fleet_id, retraction_id, status, reason, actor_id, completed_at)
    VALUES (${fleet}, ${r.retractionId}, 'REINSTATED', ${r.reason}, ${r.actorId}, now())
    RETURNING id::text AS id`.execute(db);
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

/**
 * BLOCKED by `contradictionId` (listed on the receipt), or, with null, REINSTATED and complete: insertReinstatement
 * writes a receipt REINSTATED and the transaction that writes it sets it here.
 */
export async function setBlocked(
  db: Db,
  fleet: string,
  reinstatementId: string,
  contradictionId: string | null,
): Promise<void> {
  await sql`UPDATE reinstatements SET status = ${contradictionId ? 'BLOCKED' : 'REINSTATED'}, contradiction_id = ${contradictionId},
    contradiction_ids = contradiction_ids || ${contradictionId ? sql`ARRAY[${contradictionId}::bigint]` : sql`'{}'::bigint[]`},
    completed_at = ${contradictionId ? null : sql`now()`} WHERE fleet_id = ${fleet} AND id = ${reinstatementId}`.execute(
    db,
  );
}

/**
 * What the reverse cascade did, on its receipt: the beliefs it brought back (in order, each at its level), the
 * contradictions it raised, and the effects that may be restored (`restorable`: effect.repository's
 * restorableAfter, a bigint[] expression). One statement.
 */
export async function recordReceipt(
  db: Db,
  fleet: string,
  reinstatementId: string,
  r: {
    ids: readonly number[];
    levels: readonly number[];
    contradictionIds: readonly string[];
    restorable: RawBuilder<unknown>;
  },
): Promise<void> {
  await sql`
    UPDATE reinstatements SET belief_ids = belief_ids || ${intArray(r.ids)}::bigint[], belief_depths = belief_depths || ${intArray(r.levels)}::int[],
           contradiction_ids = contradiction_ids || ${r.contradictionIds as string[]}::bigint[], restorable_effect_ids = ${r.restorable}
     WHERE fleet_id = ${fleet} AND id = ${reinstatementId}`.execute(db);
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
 * A reinstatement's figures, one statement: its receipt's counts, the effects restored since (effect.repository
 * restoredCount), its money lines' counts and per-currency sums (money-line.repository moneyLineFigures).
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
           ${restoredCount(fleet, sql`i.id`)} AS restored, ${moneyLineFigures(fleet, sql`i.id`)}
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
 * The completed reinstatement of the retraction that cancelled an effect (`cancelled_by`, of the effect's locked row)
 * that lists the effect as restorable, if any: what restoreEffect restores it under.
 */
export async function restorableBy(
  db: Db,
  fleet: string,
  effect: { id: string; cancelled_by: string | null },
): Promise<{ reinstatement_id: string; retraction_id: string } | undefined> {
  if (effect.cancelled_by === null) return undefined;
  return (
    await sql<{ reinstatement_id: string; retraction_id: string }>`
    SELECT i.id::text AS reinstatement_id, i.retraction_id::text AS retraction_id FROM reinstatements i
     WHERE i.fleet_id = ${fleet} AND i.retraction_id = ${effect.cancelled_by} AND i.status = 'REINSTATED'
       AND ${effect.id}::bigint = ANY(i.restorable_effect_ids)`.execute(db)
  ).rows[0];
}
