import { type RawBuilder, type Selectable, type Updateable, sql } from 'kysely';
import { type Page, newestFirstPage } from '../kernel/page';
import { DomainError } from '../errors/domain-error';
import { insertEvents } from '../event/event.repository';
import type { ReversalStatus, ReversalTable } from '../store/schema';
import type { Db } from '../store/tx';

/**
 * The SQL of reversals: recording them, their key, confirming and dispatching them, and reading
 * them. Every statement names its fleet on every relation it reads or writes; row-level security
 * stays as the second wall. The cross-fleet look-ups of the dispatcher and the provider callback go
 * through the narrow SECURITY DEFINER functions of db/migrations/0002_dispatch.ts.
 */
export type ReversalRow = Selectable<ReversalTable>;

/** The reversal key as SQL over `e.idempotency_key`; must equal `reversalKey` below. */
const REVERSAL_KEY_SQL = `'reversal:' || e.idempotency_key`;

/** The reversal's idempotency key: a pure function of the effect's key, so every path lands on the same one. */
export function reversalKey(effectIdempotencyKey: string): string {
  return `reversal:${effectIdempotencyKey}`;
}

/**
 * Records the reversal of every EXECUTED effect among `of` (a subquery of effect ids: effect.repository's
 * restingOnRetraction, the effects resting on a belief `retractionId` took down; or the one effect named), OWED under the reversal key, or UNREACHABLE when its kind is not
 * reversible, at most once per effect (ON CONFLICT DO NOTHING: an effect already reversed by an
 * earlier retraction keeps its one reversal), with one ReversalRecorded row for those it recorded.
 */
export async function recordReversals(
  db: Db,
  fleet: string,
  retractionId: string,
  actorId: string | null,
  of: RawBuilder<unknown> | { effectId: string },
): Promise<number> {
  const effectIds = 'effectId' in of ? sql`SELECT ${of.effectId}::bigint` : of;
  const r = await sql<{ n: number }>`
    WITH recorded AS (
      INSERT INTO reversals (fleet_id, effect_id, retraction_id, status, idempotency_key, amount_minor, currency, reason)
      SELECT e.fleet_id, e.id, ${retractionId},
             CASE WHEN k.reversible THEN 'OWED' ELSE 'UNREACHABLE' END,
             ${sql.raw(REVERSAL_KEY_SQL)},
             e.amount_minor, e.currency,
             CASE WHEN k.reversible THEN NULL ELSE 'effect kind ' || e.kind || ' has no compensation handler' END
        FROM effects e JOIN effect_kinds k ON k.fleet_id = e.fleet_id AND k.kind = e.kind
       WHERE e.fleet_id = ${fleet} AND e.status = 'EXECUTED' AND e.id IN (${effectIds})
       ORDER BY e.id
      -- A reversal VOIDED by a reinstatement is owed again when a later retraction reaches its effect:
      -- still one reversal per effect, under the one key.
      ON CONFLICT (fleet_id, effect_id) DO UPDATE SET status = EXCLUDED.status, retraction_id = EXCLUDED.retraction_id, reason = EXCLUDED.reason,
        lease_expires_at = NULL WHERE reversals.status = 'VOIDED'
      RETURNING id
    ), ev AS (
      ${insertEvents(fleet, { type: 'ReversalRecorded', actorId, retractionId, ids: sql`array_agg(id ORDER BY id)` }, sql`FROM recorded HAVING count(*) > 0`)}
    )
    SELECT count(*)::int AS n FROM recorded`.execute(db);
  return r.rows[0]!.n;
}

/**
 * The inverse of recordReversals, for a reinstatement: these reversals become VOIDED (nothing is owed; a lease is
 * dropped), with one ReversalVoided row naming them. Nothing to void, no statement.
 */
export async function voidReversals(
  db: Db,
  fleet: string,
  ids: readonly string[],
  e: { retractionId: string; actorId: string | null; data: Record<string, unknown> },
): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    WITH voided AS (
      UPDATE reversals r SET status = 'VOIDED', lease_expires_at = NULL
       WHERE r.fleet_id = ${fleet} AND r.id = ANY(${ids as string[]}::bigint[])
      RETURNING r.id
    )
    ${insertEvents(fleet, { type: 'ReversalVoided', actorId: e.actorId, retractionId: e.retractionId, ids: sql`array_agg(id ORDER BY id)`, data: JSON.stringify(e.data) }, sql`FROM voided HAVING count(*) > 0`)}`.execute(
    db,
  );
}

/** The refusal of a confirmation for a VOIDED reversal: nothing was sent, nothing is owed. */
export function voidedConflict(reversalId: string): DomainError {
  return new DomainError(
    'CONFLICT',
    `reversalId: reversal ${reversalId} is VOIDED: a reinstatement took its retraction back, so nothing is owed; reconcile a provider's payment by hand`,
    'reversalId',
  );
}

export async function lockReversal(db: Db, fleet: string, id: string): Promise<ReversalRow | undefined> {
  return db
    .selectFrom('reversals')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/** Sets the given columns of one reversal, returning the row. */
export async function updateReversal(
  db: Db,
  fleet: string,
  id: string,
  set: Updateable<ReversalTable>,
): Promise<ReversalRow> {
  return db
    .updateTable('reversals')
    .set(set)
    .where('fleet_id', '=', fleet)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function reversalsByIds(db: Db, fleet: string, ids: readonly string[]): Promise<ReversalRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('reversals')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('id', 'in', ids as string[])
    .execute();
}

/** The reversals of these effects (at most one each). */
export async function reversalsOfEffects(db: Db, fleet: string, effectIds: readonly string[]): Promise<ReversalRow[]> {
  if (effectIds.length === 0) return [];
  return db
    .selectFrom('reversals')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('effect_id', 'in', effectIds.map(String))
    .execute();
}

/** The reversals a retraction recorded, by id. */
export async function reversalsOfRetraction(db: Db, fleet: string, retractionId: string): Promise<ReversalRow[]> {
  return db
    .selectFrom('reversals')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('retraction_id', '=', retractionId)
    .orderBy('id')
    .execute();
}

/** A newest-first page of the fleet's reversals (of one status when given). */
export async function reversalPage(
  db: Db,
  fleet: string,
  f: { status: ReversalStatus | null; first: number; after: string | null },
): Promise<Page<ReversalRow>> {
  const q = db.selectFrom('reversals').where('fleet_id', '=', fleet);
  const of = f.status === null ? q : q.where('status', '=', f.status);
  return newestFirstPage(
    f.first,
    (limit) => (f.after ? of.where('id', '<', f.after) : of).selectAll().orderBy('id', 'desc').limit(limit).execute(),
    async () => (await of.select((e) => e.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n,
  );
}

/** An oldest-first page (limit first+1) of the fleet's reversals in these statuses after id `after`. */
export async function reversalsInStatuses(
  db: Db,
  fleet: string,
  statuses: readonly ReversalStatus[],
  first: number,
  after: string | null,
): Promise<ReversalRow[]> {
  let q = db
    .selectFrom('reversals')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('status', 'in', statuses as ReversalStatus[]);
  if (after) q = q.where('id', '>', after);
  return q
    .orderBy('id')
    .limit(first + 1)
    .execute();
}

/** How many of the fleet's reversals are in these statuses, and their sum per currency (exact, as text). */
export async function sumInStatuses(
  db: Db,
  fleet: string,
  statuses: readonly ReversalStatus[],
): Promise<{ n: number; sums: Array<{ currency: string; amount: string }> }> {
  const r = await sql<{ n: number; sums: Array<{ currency: string; amount: string }> | null }>`
    SELECT (SELECT count(*)::int FROM reversals WHERE fleet_id = ${fleet} AND status = ANY(${statuses as string[]}::text[])) AS n,
           (SELECT json_agg(s ORDER BY s.currency) FROM (
              SELECT currency, sum(amount_minor)::text AS amount FROM reversals
               WHERE fleet_id = ${fleet} AND status = ANY(${statuses as string[]}::text[]) AND currency IS NOT NULL GROUP BY currency) s) AS sums`.execute(
    db,
  );
  return { n: r.rows[0]!.n, sums: r.rows[0]!.sums ?? [] };
}

/** A reversal as a dispatcher takes it: the row's dispatch columns and what the provider needs about its effect. */
export interface TakenRow {
  id: string;
  effect_id: string;
  retraction_id: string;
  idempotency_key: string;
  amount_minor: string | null;
  currency: string | null;
  attempts: number;
  lease_expires_at: Date;
  dispatched_at: Date;
  kind: string;
  external_ref: string | null;
  payload: unknown;
}

/**
 * Takes up to `limit` reversals of `fleet` that are OWED, or DISPATCHED with an expired lease and a first dispatch
 * inside the resend window, oldest first, skipping rows another transaction holds. Each becomes DISPATCHED under a
 * fresh lease (`attempts` + 1, `lease_holder`), keeping `dispatched_at` as the first dispatch.
 */
export async function takeDispatchable(
  db: Db,
  fleet: string,
  o: { limit: number; leaseMs: number; holder: string; resendWindowMs: number },
): Promise<TakenRow[]> {
  const r = await sql<TakenRow>`
    WITH picked AS (
      -- now() read here, not in the UPDATE's coalesce: Citus evaluates a modification's functions before routing
      -- it, and refuses one under CASE or COALESCE. The transaction's start time either way.
      SELECT r.id, now() AS at FROM reversals r
       WHERE r.fleet_id = ${fleet} AND r.status IN ('OWED', 'DISPATCHED')
         AND (r.status = 'OWED'
              OR (r.lease_expires_at < now()
                  AND r.dispatched_at > now() - make_interval(secs => ${o.resendWindowMs}::bigint / 1000.0)))
       ORDER BY r.id
       LIMIT ${o.limit}
       FOR UPDATE OF r SKIP LOCKED
    ), taken AS (
      UPDATE reversals r
         SET status = 'DISPATCHED',
             attempts = r.attempts + 1,
             lease_holder = ${o.holder},
             lease_expires_at = now() + make_interval(secs => ${o.leaseMs}::bigint / 1000.0),
             dispatched_at = coalesce(r.dispatched_at, picked.at)
        FROM picked WHERE r.fleet_id = ${fleet} AND r.id = picked.id
      RETURNING r.id, r.effect_id, r.retraction_id, r.idempotency_key, r.amount_minor, r.currency, r.attempts,
                r.lease_expires_at, r.dispatched_at
    )
    SELECT t.id::text AS id, t.effect_id::text AS effect_id, t.retraction_id::text AS retraction_id, t.idempotency_key,
           t.amount_minor::text AS amount_minor, t.currency, t.attempts, t.lease_expires_at, t.dispatched_at,
           e.kind, e.external_ref, e.payload
      FROM taken t JOIN effects e ON e.fleet_id = ${fleet} AND e.id = t.effect_id
     ORDER BY t.id`.execute(db);
  return r.rows;
}

/** Reversals whose lease ran out after the resend window: never re-sent automatically; an operator decides. */
export async function stuckReversalRows(
  db: Db,
  fleet: string,
  resendWindowMs: number,
  limit: number,
): Promise<ReversalRow[]> {
  const r = await sql<ReversalRow>`
    SELECT * FROM reversals
     WHERE fleet_id = ${fleet} AND status = 'DISPATCHED' AND lease_expires_at < now()
       AND dispatched_at <= now() - make_interval(secs => ${resendWindowMs}::bigint / 1000.0)
     ORDER BY reversals.id LIMIT ${limit}`.execute(db);
  return r.rows;
}

/** Per-fleet counts of reversals to send and stuck past the resend window, across fleets (retract_dispatch_fleets). */
export async function dispatchFleets(
  db: Db,
  resendWindowMs: number,
): Promise<Array<{ fleetId: string; ready: number; stuck: number }>> {
  const r = await sql<{ fleet_id: string; ready: string; stuck: string }>`
    SELECT fleet_id, ready::text, stuck::text FROM retract_dispatch_fleets(${resendWindowMs}::bigint)`.execute(db);
  return r.rows.map((row) => ({ fleetId: row.fleet_id, ready: Number(row.ready), stuck: Number(row.stuck) }));
}

/** The reversal a provider callback names, across fleets (retract_locate_reversal): at most two rows. */
export async function locateReversal(
  db: Db,
  by: { reversalId?: string | null; idempotencyKey?: string | null },
): Promise<Array<{ id: string; fleetId: string; idempotencyKey: string }>> {
  const r = await sql<{ id: string; fleet_id: string; idempotency_key: string }>`
    SELECT id::text AS id, fleet_id, idempotency_key
      FROM retract_locate_reversal(${by.reversalId ?? null}::bigint, ${by.idempotencyKey ?? null}::text)`.execute(db);
  return r.rows.map((row) => ({ id: row.id, fleetId: row.fleet_id, idempotencyKey: row.idempotency_key }));
}

/** The fleet tables whose ids a provider reference must not be, and what each id is called. */
const ID_TABLES = [
  ['agents', 'an agent'],
  ['beliefs', 'a belief'],
  ['justifications', 'a justification'],
  ['effects', 'an effect'],
  ['reversals', 'a reversal'],
  ['retractions', 'a retraction'],
  ['contradictions', 'a contradiction'],
] as const;

/**
 * Which of RETRACT's own references in `fleet` `ref` is, compared after retract_ref_fold: an effect's
 * idempotency key, a reversal key, or (when `id` is given) the id of a row of one of ID_TABLES; the
 * first that matches, in that order, or null.
 */
export async function issuedRefKind(db: Db, fleet: string, ref: string, id: string | null): Promise<string | null> {
  const checks: Array<[string, RawBuilder<unknown>]> = [
    [
      "an effect's idempotency key",
      sql`SELECT 1 FROM effects WHERE fleet_id = ${fleet} AND retract_ref_fold(idempotency_key) = retract_ref_fold(${ref})`,
    ],
    [
      'a reversal key',
      sql`SELECT 1 FROM reversals WHERE fleet_id = ${fleet} AND retract_ref_fold(idempotency_key) = retract_ref_fold(${ref})`,
    ],
  ];
  if (id !== null) {
    for (const [table, what] of ID_TABLES) {
      checks.push([
        `the id of ${what}`,
        sql`SELECT 1 FROM ${sql.table(table)} WHERE fleet_id = ${fleet} AND id = ${id}::bigint`,
      ]);
    }
  }
  const r = await sql<{ k: number }>`
    SELECT k FROM (${sql.join(
      checks.map(([, q], k) => sql`SELECT ${sql.lit(k)} AS k WHERE EXISTS (${q})`),
      sql` UNION ALL `,
    )}) found
     ORDER BY k LIMIT 1`.execute(db);
  const hit = r.rows[0];
  return hit === undefined ? null : checks[Number(hit.k)]![0];
}
