import { sql } from 'kysely';
import { decodeCursor, encodeCursor } from '../kernel/cursor';
import type { Money, Totals } from '../kernel/money';
import type { Db } from '../store/tx';

export type { Money, Totals };

export interface RetractionRow {
  id: string;
  fleet_id: string;
  root_id: string;
  reason: string;
  actor_id: string;
  beliefs_retracted: number;
  created_at: Date;
}

export async function retractionsByIds(db: Db, ids: readonly string[]): Promise<RetractionRow[]> {
  if (ids.length === 0) return [];
  return (await db.selectFrom('retractions').selectAll().where('id', 'in', ids as string[]).execute()) as RetractionRow[];
}

/**
 * Totals of one retraction. Owed counts every reversal that is not UNREACHABLE, whatever its
 * dispatch state, nor VOIDED (a reinstatement took the retraction back before it was sent); settled sums only CONFIRMED ones (a provider's reference arrived). Every
 * currency that appears in exposure appears in owed, unreachableAmount and settled (0 when none).
 */
export async function totalsFor(db: Db, retractionId: string): Promise<Totals> {
  const r = await sql<{
    beliefs: number; cancelled: number; reached: number; owed: number; unreachable: number;
    money: Array<{ currency: string; exposure: string; owed: string; unreachable: string; settled: string }> | null;
  }>`
    SELECT r.beliefs_retracted AS beliefs,
           (SELECT count(*)::int FROM effects WHERE cancelled_by = r.id) AS cancelled,
           (SELECT count(*)::int FROM reversals WHERE retraction_id = r.id) AS reached,
           (SELECT count(*)::int FROM reversals WHERE retraction_id = r.id AND status NOT IN ('UNREACHABLE', 'VOIDED')) AS owed,
           (SELECT count(*)::int FROM reversals WHERE retraction_id = r.id AND status = 'UNREACHABLE') AS unreachable,
           (SELECT json_agg(m ORDER BY m.currency) FROM (
              SELECT currency,
                     sum(amount_minor)::text AS exposure,
                     coalesce(sum(amount_minor) FILTER (WHERE status NOT IN ('UNREACHABLE', 'VOIDED')), 0)::text AS owed,
                     coalesce(sum(amount_minor) FILTER (WHERE status = 'UNREACHABLE'), 0)::text AS unreachable,
                     coalesce(sum(amount_minor) FILTER (WHERE status = 'CONFIRMED'), 0)::text AS settled
                FROM reversals WHERE retraction_id = r.id AND currency IS NOT NULL GROUP BY currency) m) AS money
      FROM retractions r WHERE r.id = ${retractionId}`.execute(db);
  const row = r.rows[0];
  if (!row) throw new Error(`retraction ${retractionId} vanished`);
  const money = row.money ?? [];
  const pick = (k: 'exposure' | 'owed' | 'unreachable' | 'settled') => money.map((m) => ({ amountMinor: m[k], currency: m.currency }));
  return {
    beliefsRetracted: row.beliefs,
    effectsCancelled: row.cancelled,
    effectsReached: row.reached,
    reversalsOwed: row.owed,
    unreachable: row.unreachable,
    exposure: pick('exposure'),
    owed: pick('owed'),
    unreachableAmount: pick('unreachable'),
    settled: pick('settled'),
  };
}

export interface Page<T> {
  items: T[];
  hasNextPage: boolean;
  endCursor: string | null;
  totalCount: number;
}

/**
 * Beliefs a retraction took down, root first then cascade order (depth, id), keyset-paged. Ordered
 * by the bigint id, not its text alias (which would put 10 before 9 and make the cursor skip beliefs).
 */
export async function retractedBeliefPage(db: Db, retractionId: string, first: number, after: string | null): Promise<Page<{ id: string; depth: number }>> {
  const pos = after ? decodeDepthCursor('after', after) : null;
  const rows = await sql<{ id: string; depth: number }>`
    SELECT id::text AS id, retraction_depth AS depth FROM beliefs
     WHERE retraction_id = ${retractionId}
       ${pos ? sql`AND (retraction_depth, id) > (${pos.depth}, ${pos.id}::bigint)` : sql``}
     ORDER BY retraction_depth, beliefs.id LIMIT ${first + 1}`.execute(db);
  const total = await sql<{ n: number }>`SELECT beliefs_retracted AS n FROM retractions WHERE id = ${retractionId}`.execute(db);
  const items = rows.rows.slice(0, first);
  const last = items[items.length - 1];
  return {
    items,
    hasNextPage: rows.rows.length > first,
    endCursor: last ? encodeDepthCursor(last.depth, last.id) : null,
    totalCount: total.rows[0]?.n ?? 0,
  };
}

/** Keyset cursor over cascade order (depth, id). */
export function encodeDepthCursor(depth: number, id: string): string {
  return encodeCursor('d1', [depth, id]);
}

/** A cascade-order position; BAD_USER_INPUT naming `field` when `s` is not such a cursor. */
export function decodeDepthCursor(field: string, s: string, rule?: string): { depth: number; id: string } {
  const [depth, id] = decodeCursor(field, s, 'd1', ['int', 'id'], rule);
  return { depth: Number(depth), id: id! };
}
