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
}

/** Sums the fleet's OWED and DISPATCHED reversals per currency, in one statement over reversals_fleet_status. */
export async function openMoney(db: Db, fleet: string): Promise<OpenMoney> {
  const r = await sql<{ status: string; n: number; currency: string | null; sum: string }>`
    SELECT status, count(*)::int AS n, currency, coalesce(sum(amount_minor), 0)::text AS sum
      FROM reversals WHERE fleet_id = ${fleet} AND status IN ('OWED', 'DISPATCHED')
     GROUP BY status, currency ORDER BY status, currency`.execute(db);
  const pick = (status: string) => r.rows.filter((x) => x.status === status);
  const money = (status: string) => pick(status).filter((x) => x.currency !== null).map((x) => ({ amountMinor: x.sum, currency: x.currency! }));
  const count = (status: string) => pick(status).reduce((n, x) => n + x.n, 0);
  return { owedCount: count('OWED'), owed: money('OWED'), inFlightCount: count('DISPATCHED'), inFlight: money('DISPATCHED') };
}
