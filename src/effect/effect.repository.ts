import { type Selectable, type Updateable, sql } from 'kysely';
import { type Page, newestFirstPage } from '../kernel/page';
import type { EffectStatus, EffectTable } from '../store/schema';
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

/** The effects resting on a belief `retractionId` took down, as a subquery of effect ids. */
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
    INSERT INTO events (fleet_id, type, retraction_id, ids, actor_id)
    SELECT ${fleet}, 'EffectCancelled', ${retractionId}, array_agg(id ORDER BY id), ${actorId} FROM cancelled HAVING count(*) > 0
    RETURNING seq`.execute(db);
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
