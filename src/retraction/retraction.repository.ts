import { type Selectable, sql } from 'kysely';
import type { Totals } from '../kernel/money';
import { decodeDepthCursor, encodeDepthCursor, type Page, newestFirstPage, pageOf } from '../kernel/page';
import type { RetractionTable } from '../store/schema';
import type { Db } from '../store/tx';

/**
 * The SQL of retractions (receipts): the row, its totals, and the beliefs it took down. Every
 * statement names its fleet on every relation; row-level security stays as the second wall.
 */
export type RetractionRow = Selectable<RetractionTable>;

export async function insertRetraction(
  db: Db,
  fleet: string,
  r: { rootId: string; reason: string; actorId: string },
): Promise<string> {
  const row = await db
    .insertInto('retractions')
    .values({ fleet_id: fleet, root_id: r.rootId, reason: r.reason, actor_id: r.actorId })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function setBeliefsRetracted(db: Db, fleet: string, id: string, n: number): Promise<void> {
  await db
    .updateTable('retractions')
    .set({ beliefs_retracted: n })
    .where('fleet_id', '=', fleet)
    .where('id', '=', id)
    .execute();
}

export async function retractionsByIds(db: Db, fleet: string, ids: readonly string[]): Promise<RetractionRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('retractions')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('id', 'in', ids as string[])
    .execute();
}

/** The fleet's newest retraction's id, or null when it has none. */
export async function newestRetractionId(db: Db, fleet: string): Promise<string | null> {
  return (
    (
      await db
        .selectFrom('retractions')
        .select('id')
        .where('fleet_id', '=', fleet)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
    )?.id ?? null
  );
}

/** A newest-first page of the fleet's retractions. */
export async function retractionPage(
  db: Db,
  fleet: string,
  first: number,
  after: string | null,
): Promise<Page<RetractionRow>> {
  const q = db.selectFrom('retractions').where('fleet_id', '=', fleet);
  return newestFirstPage(
    first,
    (limit) => (after ? q.where('id', '<', after) : q).selectAll().orderBy('id', 'desc').limit(limit).execute(),
    async () => (await q.select((e) => e.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n,
  );
}

/**
 * Totals of one retraction. Owed counts every reversal that is not UNREACHABLE, whatever its
 * dispatch state, nor VOIDED (a reinstatement took the retraction back before it was sent); settled sums only CONFIRMED ones (a provider's reference arrived). Every
 * currency that appears in exposure appears in owed, unreachableAmount and settled (0 when none).
 */
export async function totalsFor(db: Db, fleet: string, retractionId: string): Promise<Totals> {
  const r = await sql<{
    beliefs: number;
    cancelled: number;
    reached: number;
    owed: number;
    unreachable: number;
    money: Array<{ currency: string; exposure: string; owed: string; unreachable: string; settled: string }> | null;
  }>`
    SELECT r.beliefs_retracted AS beliefs,
           (SELECT count(*)::int FROM effects WHERE fleet_id = ${fleet} AND cancelled_by = r.id) AS cancelled,
           (SELECT count(*)::int FROM reversals WHERE fleet_id = ${fleet} AND retraction_id = r.id) AS reached,
           (SELECT count(*)::int FROM reversals WHERE fleet_id = ${fleet} AND retraction_id = r.id AND status NOT IN ('UNREACHABLE', 'VOIDED')) AS owed,
           (SELECT count(*)::int FROM reversals WHERE fleet_id = ${fleet} AND retraction_id = r.id AND status = 'UNREACHABLE') AS unreachable,
           (SELECT json_agg(m ORDER BY m.currency) FROM (
              SELECT currency,
                     sum(amount_minor)::text AS exposure,
                     coalesce(sum(amount_minor) FILTER (WHERE status NOT IN ('UNREACHABLE', 'VOIDED')), 0)::text AS owed,
                     coalesce(sum(amount_minor) FILTER (WHERE status = 'UNREACHABLE'), 0)::text AS unreachable,
                     coalesce(sum(amount_minor) FILTER (WHERE status = 'CONFIRMED'), 0)::text AS settled
                FROM reversals WHERE fleet_id = ${fleet} AND retraction_id = r.id AND currency IS NOT NULL GROUP BY currency) m) AS money
      FROM retractions r WHERE r.fleet_id = ${fleet} AND r.id = ${retractionId}`.execute(db);
  const row = r.rows[0];
  if (!row) throw new Error(`retraction ${retractionId} vanished`);
  const money = row.money ?? [];
  const pick = (k: 'exposure' | 'owed' | 'unreachable' | 'settled') =>
    money.map((m) => ({ amountMinor: m[k], currency: m.currency }));
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

/**
 * Beliefs a retraction took down, root first then cascade order (depth, id), keyset-paged. Ordered
 * by the bigint id, not its text alias (which would put 10 before 9 and make the cursor skip beliefs).
 */
export async function retractedBeliefPage(
  db: Db,
  fleet: string,
  retractionId: string,
  first: number,
  after: string | null,
): Promise<Page<{ id: string; depth: number }>> {
  const pos = after ? decodeDepthCursor('after', after) : null;
  const rows = await sql<{ id: string; depth: number }>`
    SELECT id::text AS id, retraction_depth AS depth FROM beliefs
     WHERE fleet_id = ${fleet} AND retraction_id = ${retractionId}
       ${pos ? sql`AND (retraction_depth, id) > (${pos.depth}, ${pos.id}::bigint)` : sql``}
     ORDER BY retraction_depth, beliefs.id LIMIT ${first + 1}`.execute(db);
  const total = await db
    .selectFrom('retractions')
    .select('beliefs_retracted')
    .where('fleet_id', '=', fleet)
    .where('id', '=', retractionId)
    .executeTakeFirst();
  return pageOf(rows.rows, first, (b) => encodeDepthCursor(b.depth, b.id), total?.beliefs_retracted ?? 0);
}

/** The retraction to reinstate, locked (FOR UPDATE): root and whether it was already taken back. */
export async function lockRetraction(
  db: Db,
  fleet: string,
  retractionId: string,
): Promise<{ id: string; root_id: string; reinstated_at: Date | null } | undefined> {
  return (
    await sql<{ id: string; root_id: string; reinstated_at: Date | null }>`
    SELECT id::text AS id, root_id::text AS root_id, reinstated_at FROM retractions WHERE fleet_id = ${fleet} AND id = ${retractionId} FOR UPDATE`.execute(
      db,
    )
  ).rows[0];
}

/** The inverse of a retraction's commit: it is taken back (one reinstatement per retraction, enforced by lockRetraction's caller). */
export async function markRetractionReinstated(db: Db, fleet: string, retractionId: string): Promise<void> {
  await sql`UPDATE retractions SET reinstated_at = now() WHERE fleet_id = ${fleet} AND id = ${retractionId}`.execute(
    db,
  );
}
