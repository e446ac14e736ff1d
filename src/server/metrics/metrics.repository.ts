import { sql } from 'kysely';
import type { Db } from '../../store/tx';

/** One aggregate line of retract_metrics_open (db/migrations/0013_metrics.ts). */
export interface OpenLine {
  fleet: string;
  /** OWED, DISPATCHED, UNREACHABLE (reversals), REEXECUTION_OWED (reinstatement_money), PENDING_EFFECT (effects). */
  status: string;
  currency: string | null;
  count: number;
  /** Sum in minor units (a decimal string: bigint sums exceed 2^53); null for lines without money. */
  amountMinor: string | null;
  /** When the oldest item of the line was recorded. */
  oldest: Date;
}

/** The open money and backlogs of every fleet, aggregated, through the SECURITY DEFINER function: no row contents. */
export async function openLines(db: Db): Promise<OpenLine[]> {
  const r = await sql<{
    fleet_id: string;
    status: string;
    currency: string | null;
    n: string;
    amount_minor: string | null;
    oldest: Date | string;
  }>`
    SELECT fleet_id, status, currency, n::text AS n, amount_minor::text AS amount_minor, oldest FROM retract_metrics_open()`.execute(
    db,
  );
  return r.rows.map((x) => ({
    fleet: x.fleet_id,
    status: x.status,
    currency: x.currency,
    count: Number(x.n),
    amountMinor: x.amount_minor,
    oldest: new Date(x.oldest),
  }));
}
