import { type RawBuilder, type Selectable, sql } from 'kysely';
import type { ReinstatementMoneyTable } from '../store/schema';
import type { Db } from '../store/tx';
import { voidReversals } from './reversal.repository';

/**
 * The SQL of reinstatement money lines (reinstatement_money): what became of each reversal a reinstatement touched,
 * one line per reversal — VOIDED (never sent, nothing owed), IN_FLIGHT (DISPATCHED or FAILED: the provider's answer
 * decides) or REEXECUTION_OWED (CONFIRMED: the money came back, so the effect is owed again). The lines live with
 * reversals because both their writers are a reversal's: a reinstatement settling what it owes (reinstatement sits
 * above reversal) and a provider's later answer on the reversal's own path (confirm, fail), which cannot reach up
 * to reinstatement/.
 */
export type MoneyLineRow = Selectable<ReinstatementMoneyTable>;

/** The key a re-execution is owed under: a pure function of the reversal's key (itself of the effect's). */
const REEXECUTION_KEY_SQL = `'reexecution:' || r.idempotency_key`;

/**
 * The money of what came back: a line for every reversal (not VOIDED) of the effects `touched` (a subquery of effect
 * ids: effect.repository's effectsBackOn), OWED and UNREACHABLE ones then VOIDED (voidReversals, one ReversalVoided
 * row). Returns how many lines it wrote.
 */
export async function recordMoneyLines(
  db: Db,
  fleet: string,
  r: { reinstatementId: string; retractionId: string; actorId: string },
  touched: RawBuilder<unknown>,
): Promise<number> {
  const lines = await sql<{ reversal_id: string; line: string }>`
    WITH touched AS MATERIALIZED (${touched})
    INSERT INTO reinstatement_money (fleet_id, reinstatement_id, reversal_id, effect_id, line, prior_status, amount_minor, currency, reexecution_key)
    SELECT ${fleet}, ${r.reinstatementId}, r.id, r.effect_id,
           CASE r.status WHEN 'CONFIRMED' THEN 'REEXECUTION_OWED' WHEN 'DISPATCHED' THEN 'IN_FLIGHT' WHEN 'FAILED' THEN 'IN_FLIGHT' ELSE 'VOIDED' END,
           r.status, r.amount_minor, r.currency,
           CASE WHEN r.status = 'CONFIRMED' THEN ${sql.raw(REEXECUTION_KEY_SQL)} END
      FROM reversals r JOIN touched t ON r.effect_id = t.effect_id
     WHERE r.fleet_id = ${fleet} AND r.status <> 'VOIDED'
     ORDER BY r.id
    ON CONFLICT DO NOTHING
    RETURNING reversal_id::text AS reversal_id, line`.execute(db);
  const voided = lines.rows.filter((l) => l.line === 'VOIDED').map((l) => l.reversal_id);
  await voidReversals(db, fleet, voided, {
    retractionId: r.retractionId,
    actorId: r.actorId,
    data: { reinstatementId: r.reinstatementId },
  });
  return lines.rows.length;
}

/**
 * A watched reversal's provider answer, recorded on the line that watches it: CONFIRMED makes the
 * line re-execution owed (the money came back after all); FAILED voids it and the reversal (nothing
 * moved, nothing is owed). No line, nothing happens. Returns the lines changed.
 */
export async function recordWatchedOutcome(
  db: Db,
  fleet: string,
  actorId: string | null,
  reversal: { id: string; retraction_id: string },
  outcome: 'CONFIRMED' | 'FAILED',
): Promise<number> {
  if (outcome === 'CONFIRMED') {
    const r = await sql<{ n: number }>`
      WITH changed AS (
        UPDATE reinstatement_money m SET line = 'REEXECUTION_OWED', outcome = 'CONFIRMED', outcome_at = now(),
               reexecution_key = (SELECT ${sql.raw(REEXECUTION_KEY_SQL)} FROM reversals r WHERE r.fleet_id = ${fleet} AND r.id = m.reversal_id)
         WHERE m.fleet_id = ${fleet} AND m.reversal_id = ${reversal.id} AND m.line = 'IN_FLIGHT'
        RETURNING 1)
      SELECT count(*)::int AS n FROM changed`.execute(db);
    return r.rows[0]!.n;
  }
  const changed = await sql<{ reinstatement_id: string }>`
    UPDATE reinstatement_money m SET line = 'VOIDED', outcome = 'FAILED', outcome_at = now()
     WHERE m.fleet_id = ${fleet} AND m.reversal_id = ${reversal.id} AND m.line = 'IN_FLIGHT'
    RETURNING m.reinstatement_id::text AS reinstatement_id`.execute(db);
  const line = changed.rows[0];
  if (line)
    await voidReversals(db, fleet, [reversal.id], {
      retractionId: reversal.retraction_id,
      actorId,
      data: { reinstatementId: line.reinstatement_id, outcome: 'FAILED' },
    });
  return changed.rows.length;
}

export async function moneyLines(db: Db, fleet: string, reinstatementId: string): Promise<MoneyLineRow[]> {
  return (
    await sql<MoneyLineRow>`
    SELECT fleet_id, reinstatement_id::text AS reinstatement_id, reversal_id::text AS reversal_id, effect_id::text AS effect_id, line, prior_status,
           amount_minor::text AS amount_minor, currency, reexecution_key, outcome, outcome_at, created_at
      FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = ${reinstatementId}
     ORDER BY m.reversal_id`.execute(db)
  ).rows; // the column, not the ::text output name ("10" sorts before "9")
}

/**
 * The figures of a reinstatement's lines, as columns of the statement that reads its receipt (`id`: the
 * reinstatement's id column there): `voided`, `in_flight`, `owed` (counts) and `money` (per currency, each sum as
 * text, every currency a line carries in each sum, 0 when none).
 */
export function moneyLineFigures(fleet: string, id: RawBuilder<unknown>): RawBuilder<unknown> {
  const count = (line: string) =>
    sql`(SELECT count(*)::int FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = ${id} AND m.line = ${sql.lit(line)})`;
  return sql`${count('VOIDED')} AS voided, ${count('IN_FLIGHT')} AS in_flight, ${count('REEXECUTION_OWED')} AS owed,
           (SELECT json_agg(x ORDER BY x.currency) FROM (
              SELECT currency,
                     coalesce(sum(amount_minor) FILTER (WHERE line = 'VOIDED'), 0)::text AS voided,
                     coalesce(sum(amount_minor) FILTER (WHERE line = 'IN_FLIGHT'), 0)::text AS in_flight,
                     coalesce(sum(amount_minor) FILTER (WHERE line = 'REEXECUTION_OWED'), 0)::text AS owed
                FROM reinstatement_money m WHERE m.fleet_id = ${fleet} AND m.reinstatement_id = ${id} AND currency IS NOT NULL GROUP BY currency) x) AS money`;
}
