import { sql } from 'kysely';
import type { Money } from '../kernel/money';
import type { Db } from '../store/tx';

/** The fleet's open money at a glance: what is still owed back, and what is on its way back now. */
export interface OpenMoney {
  /** Reversals OWED and not yet sent (nor given up): their count and sum per currency. */
  owedCount: number;
  owed: Money[];
  /** Reversals DISPATCHED to a provider, awaiting its answer. */
  inFlightCount: number;
  inFlight: Money[];
  /** Money a reinstatement found already come back that should not have (reinstatement_money REEXECUTION_OWED lines): named, never executed here. */
  reexecutionOwedCount: number;
  reexecutionOwed: Money[];
}

/** Sums the fleet's OWED and DISPATCHED reversals and its re-executions owed, per currency, in one statement. */
export async function openMoney(db: Db, fleet: string): Promise<OpenMoney> {
  const r = await sql<{ line: string; n: number; currency: string | null; sum: string }>`
    SELECT status AS line, count(*)::int AS n, currency, coalesce(sum(amount_minor), 0)::text AS sum
      FROM reversals WHERE fleet_id = ${fleet} AND status IN ('OWED', 'DISPATCHED')
     GROUP BY status, currency
    UNION ALL
    SELECT line, count(*)::int, currency, coalesce(sum(amount_minor), 0)::text
      FROM reinstatement_money WHERE fleet_id = ${fleet} AND line = 'REEXECUTION_OWED'
     GROUP BY line, currency
     ORDER BY 1, 3`.execute(db);
  const pick = (line: string) => r.rows.filter((x) => x.line === line);
  const money = (line: string) =>
    pick(line)
      .filter((x) => x.currency !== null)
      .map((x) => ({ amountMinor: x.sum, currency: x.currency! }));
  const count = (line: string) => pick(line).reduce((n, x) => n + x.n, 0);
  return {
    owedCount: count('OWED'),
    owed: money('OWED'),
    inFlightCount: count('DISPATCHED'),
    inFlight: money('DISPATCHED'),
    reexecutionOwedCount: count('REEXECUTION_OWED'),
    reexecutionOwed: money('REEXECUTION_OWED'),
  };
}
