import { type RawBuilder, type Selectable, type Updateable, sql } from 'kysely';
import { type Page, newestFirstPage } from '../kernel/page';
import type { EffectStatus, EffectTable } from '../store/schema';
import { insertEvents } from '../event/event.repository';
import { intArray } from '../store/pg-array';
import type { Db } from '../store/tx';

/**
 * The SQL of effects, their kinds and their supports. Every statement names its fleet on every
 * relation it reads or writes; row-level security (the transaction's fleet) stays as the second wall.
 */
export type EffectRow = Selectable<EffectTable>;

export async function effectsByIds(db: Db, fleet: string, ids: readonly string[]): Promise<EffectRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('effects')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('id', 'in', ids as string[])
    .execute();
}

export async function lockEffect(db: Db, fleet: string, id: string): Promise<EffectRow | undefined> {
  return db
    .selectFrom('effects')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function effectByKey(db: Db, fleet: string, key: string): Promise<EffectRow | undefined> {
  return db
    .selectFrom('effects')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

export async function effectKind(
  db: Db,
  fleet: string,
  kind: string,
): Promise<{ kind: string; reversible: boolean } | undefined> {
  return db
    .selectFrom('effect_kinds')
    .select(['kind', 'reversible'])
    .where('fleet_id', '=', fleet)
    .where('kind', '=', kind)
    .executeTakeFirst();
}

export async function insertEffectKind(
  db: Db,
  fleet: string,
  kind: string,
  reversible: boolean,
): Promise<{ kind: string; reversible: boolean }> {
  return db
    .insertInto('effect_kinds')
    .values({ fleet_id: fleet, kind, reversible })
    .returning(['kind', 'reversible'])
    .executeTakeFirstOrThrow();
}

/** The fleet's effect kinds, by name. */
export async function effectKinds(db: Db, fleet: string): Promise<Array<{ kind: string; reversible: boolean }>> {
  return db
    .selectFrom('effect_kinds')
    .select(['kind', 'reversible'])
    .where('fleet_id', '=', fleet)
    .orderBy('kind')
    .execute();
}

/**
 * Writes a PENDING effect under `key`, or nothing when the fleet already has an effect under that key
 * (undefined). Inserting first and looking the key up only on a conflict matters under SERIALIZABLE:
 * a lookup that finds nothing predicate-locks the key index's page, where concurrent proposals insert
 * theirs, and two proposals that both looked formed a cycle one of them had to retry (FINDINGS, stress).
 */
export async function insertEffect(
  db: Db,
  e: {
    fleet: string;
    kind: string;
    amount: { amountMinor: number; currency: string } | null;
    payload: string | null;
    key: string;
    proposedBy: string;
  },
): Promise<EffectRow | undefined> {
  return db
    .insertInto('effects')
    .values({
      fleet_id: e.fleet,
      kind: e.kind,
      amount_minor: e.amount?.amountMinor ?? null,
      currency: e.amount?.currency ?? null,
      payload: e.payload,
      idempotency_key: e.key,
      proposed_by: e.proposedBy,
    })
    .onConflict((oc) => oc.columns(['fleet_id', 'idempotency_key']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** Records the beliefs an effect rests on. */
export async function insertSupports(
  db: Db,
  fleet: string,
  effectId: string,
  supports: readonly string[],
): Promise<void> {
  await db
    .insertInto('effect_supports')
    .values(supports.map((b) => ({ effect_id: effectId, belief_id: b, fleet_id: fleet })))
    .execute();
}

/** Whether the effect's payload equals `payload` (as jsonb), and its supports in id order. */
export async function payloadAndSupports(
  db: Db,
  fleet: string,
  effectId: string,
  payload: string | null,
): Promise<{ samePayload: boolean; supports: string[] }> {
  const r = await sql<{ same_payload: boolean; supports: string[] }>`
    SELECT (e.payload IS NOT DISTINCT FROM ${payload}::jsonb) AS same_payload,
           ARRAY(SELECT s.belief_id::text FROM effect_supports s WHERE s.fleet_id = ${fleet} AND s.effect_id = e.id ORDER BY s.belief_id) AS supports
      FROM effects e WHERE e.fleet_id = ${fleet} AND e.id = ${effectId}`.execute(db);
  return { samePayload: r.rows[0]!.same_payload, supports: r.rows[0]!.supports };
}

/** The id of the oldest PENDING effect (of these kinds) whose supports are all ACTIVE, locked, skipping rows others hold. */
export async function lockNextReady(
  db: Db,
  fleet: string,
  kinds: readonly string[] | null,
): Promise<string | undefined> {
  const r = await sql<{ id: string }>`
    SELECT e.id::text AS id FROM effects e
     WHERE e.fleet_id = ${fleet} AND e.status = 'PENDING'
       ${kinds ? sql`AND e.kind = ANY(${kinds}::text[])` : sql``}
       AND NOT EXISTS (SELECT 1 FROM effect_supports s
                        WHERE s.fleet_id = ${fleet} AND s.effect_id = e.id
                          AND (SELECT b.status FROM beliefs b WHERE b.fleet_id = ${fleet} AND b.id = s.belief_id) <> 'ACTIVE')
     ORDER BY e.id LIMIT 1
     FOR UPDATE OF e SKIP LOCKED`.execute(db);
  return r.rows[0]?.id;
}

/** Whether the fleet has a PENDING effect of these kinds (a read-only look before claiming). */
export async function anyPending(db: Db, fleet: string, kinds: readonly string[]): Promise<boolean> {
  const r = await sql<{ any: boolean }>`
    SELECT EXISTS (SELECT 1 FROM effects WHERE fleet_id = ${fleet} AND status = 'PENDING' AND kind = ANY(${kinds as string[]}::text[])) AS any`.execute(
    db,
  );
  return r.rows[0]!.any;
}

/** Moves one effect on (its new status and what comes with it), returning the row. */
export async function updateEffect(
  db: Db,
  fleet: string,
  id: string,
  set: Updateable<EffectTable> & { status: EffectStatus },
): Promise<EffectRow> {
  return db
    .updateTable('effects')
    .set(set)
    .where('fleet_id', '=', fleet)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * The retraction that reached an effect: the one that marked it, else the first that took one of its
 * supports down. Each support's belief by its primary key (here and in lockNextReady): as a join, a
 * table without statistics was read over the whole fleet, predicate-locking every belief page against
 * concurrent inserts (as in lockBeliefs).
 */
export async function reachingRetraction(
  db: Db,
  fleet: string,
  effect: { id: string; reached_by: string | null },
): Promise<string | null> {
  const r = await sql<{ rid: string | null }>`
    SELECT coalesce(${effect.reached_by}::bigint,
      (SELECT min((SELECT b.retraction_id FROM beliefs b WHERE b.fleet_id = ${fleet} AND b.id = s.belief_id)) FROM effect_supports s
        WHERE s.fleet_id = ${fleet} AND s.effect_id = ${effect.id}))::text AS rid`.execute(db);
  return r.rows[0]!.rid;
}

/** The effects resting on a belief `retractionId` took down, as a subquery of effect ids (reach.ts hands it to recordReversals). */
export function restingOnRetraction(fleet: string, retractionId: string) {
  return sql`SELECT s.effect_id FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
              WHERE s.fleet_id = ${fleet} AND b.retraction_id = ${retractionId}`;
}

/** Cancels the PENDING effects resting on a belief the retraction took down, with one EffectCancelled row for them. */
export async function cancelPendingOn(db: Db, fleet: string, retractionId: string, actorId: string): Promise<void> {
  await sql`
    WITH cancelled AS (
      UPDATE effects e SET status = 'CANCELLED', cancelled_by = ${retractionId}, cancelled_at = now()
       WHERE e.fleet_id = ${fleet} AND e.status = 'PENDING' AND e.id IN (${restingOnRetraction(fleet, retractionId)})
      RETURNING e.id
    )
    ${insertEvents(fleet, { type: 'EffectCancelled', actorId, retractionId, ids: sql`array_agg(id ORDER BY id)` }, sql`FROM cancelled HAVING count(*) > 0`)}`.execute(
    db,
  );
}

/** Marks the EXECUTING effects resting on a belief the retraction took down as reached by it (completeEffect records their reversal). */
export async function markReachedBy(db: Db, fleet: string, retractionId: string): Promise<void> {
  await sql`
    UPDATE effects e SET reached_by = ${retractionId}
     WHERE e.fleet_id = ${fleet} AND e.status = 'EXECUTING' AND e.reached_by IS NULL
       AND e.id IN (${restingOnRetraction(fleet, retractionId)})`.execute(db);
}

/** (belief, effect) support pairs of these beliefs or of these effects. */
export async function supportsOf(
  db: Db,
  fleet: string,
  by: 'belief_id' | 'effect_id',
  ids: readonly string[],
): Promise<Array<{ belief_id: string; effect_id: string }>> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('effect_supports')
    .select(['belief_id', 'effect_id'])
    .where('fleet_id', '=', fleet)
    .where(by, 'in', ids.map(String))
    .orderBy(by === 'belief_id' ? 'effect_id' : 'belief_id')
    .execute();
}

/** A newest-first page of the fleet's effects (of one status when given). */
export async function effectPage(
  db: Db,
  fleet: string,
  f: { status: EffectStatus | null; first: number; after: string | null },
): Promise<Page<EffectRow>> {
  const q = db
    .selectFrom('effects')
    .where('fleet_id', '=', fleet)
    .$if(f.status !== null, (w) => w.where('status', '=', f.status!));
  const below = f.after === null ? q : q.where('id', '<', f.after);
  return newestFirstPage(
    f.first,
    (limit) => below.selectAll().orderBy('id', 'desc').limit(limit).execute(),
    async () => (await q.select((e) => e.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n,
  );
}

/** The effects a retraction cancelled, reached while EXECUTING, or owes a reversal for, by id. */
export async function effectsTouchedBy(db: Db, fleet: string, retractionId: string): Promise<EffectRow[]> {
  return db
    .selectFrom('effects')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where((w) =>
      w.or([
        w('cancelled_by', '=', retractionId),
        w('reached_by', '=', retractionId),
        w(
          'id',
          'in',
          w
            .selectFrom('reversals')
            .select('effect_id')
            .where('fleet_id', '=', fleet)
            .where('retraction_id', '=', retractionId),
        ),
      ]),
    )
    .orderBy('id')
    .execute();
}

/** Up to `limit` effects resting on any of `beliefIds`, by id, each with the ones of them it rests on. */
export async function effectsRestingOn(
  db: Db,
  fleet: string,
  beliefIds: readonly string[],
  limit: number,
): Promise<Array<EffectRow & { rests_on: string[] }>> {
  const r = await sql<EffectRow & { rests_on: string[] }>`
    SELECT e.*, s.rests_on FROM (
      SELECT effect_id, array_agg(belief_id::text ORDER BY belief_id) AS rests_on FROM effect_supports
       WHERE fleet_id = ${fleet} AND belief_id = ANY(${beliefIds.map(String)}::bigint[]) GROUP BY effect_id ORDER BY effect_id LIMIT ${limit}) s
    JOIN effects e ON e.fleet_id = ${fleet} AND e.id = s.effect_id ORDER BY e.id`.execute(db);
  return r.rows;
}

/**
 * The effects a reinstatement settles the money of: those resting on one of `beliefIds` (brought back now) and on
 * no belief that is not ACTIVE, as a subquery of effect ids (the reinstatement hands it to recordMoneyLines).
 */
export function effectsBackOn(fleet: string, beliefIds: readonly number[]): RawBuilder<unknown> {
  return sql`SELECT DISTINCT s.effect_id FROM effect_supports s
       WHERE s.fleet_id = ${fleet} AND s.belief_id IN (SELECT unnest(${intArray(beliefIds)}::bigint[]))
         AND NOT EXISTS (SELECT 1 FROM effect_supports o JOIN beliefs b ON b.fleet_id = o.fleet_id AND b.id = o.belief_id
                          WHERE o.fleet_id = ${fleet} AND o.effect_id = s.effect_id AND b.status <> 'ACTIVE')`;
}

/**
 * The inverse of markReachedBy, for a reinstatement: EXECUTING effects reached by `retractionId` are reached by
 * none now, or by the first retraction still holding one of their supports down (completeEffect records their
 * reversal there).
 */
export async function reachAgain(db: Db, fleet: string, retractionId: string): Promise<void> {
  await sql`
    UPDATE effects e SET reached_by = (
             SELECT min(b.retraction_id) FROM effect_supports o JOIN beliefs b ON b.fleet_id = o.fleet_id AND b.id = o.belief_id
              WHERE o.fleet_id = ${fleet} AND o.effect_id = e.id AND b.status = 'RETRACTED')
     WHERE e.fleet_id = ${fleet} AND e.reached_by = ${retractionId} AND e.status = 'EXECUTING'`.execute(db);
}

/** The ids of the PENDING effects `retractionId` cancelled whose supports are all ACTIVE again, as a bigint[] expression ('{}' for none). */
export function restorableAfter(fleet: string, retractionId: string): RawBuilder<unknown> {
  return sql`coalesce((
      SELECT array_agg(e.id ORDER BY e.id) FROM effects e
       WHERE e.fleet_id = ${fleet} AND e.cancelled_by = ${retractionId} AND e.status = 'CANCELLED'
         AND NOT EXISTS (SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
                          WHERE s.fleet_id = ${fleet} AND s.effect_id = e.id AND b.status <> 'ACTIVE')), '{}')`;
}

/** How many effects a reinstatement restored (`id`: the reinstatement's id column of the statement it is part of). */
export function restoredCount(fleet: string, id: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`(SELECT count(*)::int FROM effects e WHERE e.fleet_id = ${fleet} AND e.restored_by = ${id})`;
}

/** The first support of the effect (by id) that is not ACTIVE, or null. */
export async function firstDownSupport(db: Db, fleet: string, effectId: string): Promise<string | null> {
  return (
    (
      await sql<{ id: string }>`
    SELECT b.id::text AS id FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
     WHERE s.fleet_id = ${fleet} AND s.effect_id = ${effectId} AND b.status <> 'ACTIVE' ORDER BY b.id LIMIT 1`.execute(
        db,
      )
    ).rows[0]?.id ?? null
  );
}

/**
 * The inverse of cancelPendingOn, for restoreEffect: a CANCELLED effect is PENDING again under its own key,
 * restored by `reinstatementId`, with its EffectRestored row.
 */
export async function restoreCancelled(
  db: Db,
  fleet: string,
  effectId: string,
  r: { reinstatementId: string; retractionId: string; actorId: string },
): Promise<void> {
  await sql`
    WITH restored AS (
      UPDATE effects SET status = 'PENDING', cancelled_by = NULL, cancelled_at = NULL, restored_by = ${r.reinstatementId}
       WHERE fleet_id = ${fleet} AND id = ${effectId} AND status = 'CANCELLED'
      RETURNING id)
    ${insertEvents(fleet, { type: 'EffectRestored', actorId: r.actorId, retractionId: r.retractionId, ids: sql`ARRAY[id]`, data: JSON.stringify({ reinstatementId: r.reinstatementId }) }, sql`FROM restored`)}`.execute(
    db,
  );
}
