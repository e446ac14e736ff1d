import { type Insertable, type Selectable, type Updateable, sql } from 'kysely';
import type { ContradictionStatus, ContradictionTable } from '../store/schema';
import { insertEvents } from '../event/event.repository';
import { intArray, textArray } from '../store/pg-array';
import type { Db } from '../store/tx';

/**
 * The SQL of contradictions and their adjudication leases. Every statement names its fleet on
 * every relation; row-level security stays as the second wall.
 */
export type ContradictionRow = Selectable<ContradictionTable>;

/** Raises a contradiction (OPEN); returns its id. */
export async function insertContradiction(
  db: Db,
  fleet: string,
  c: Omit<Insertable<ContradictionTable>, 'fleet_id'>,
): Promise<string> {
  return (
    await db
      .insertInto('contradictions')
      .values({ ...c, fleet_id: fleet })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
}

export async function lockContradiction(db: Db, fleet: string, id: string): Promise<ContradictionRow | undefined> {
  return db
    .selectFrom('contradictions')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export async function updateContradiction(
  db: Db,
  fleet: string,
  id: string,
  set: Updateable<ContradictionTable>,
): Promise<void> {
  await db.updateTable('contradictions').set(set).where('fleet_id', '=', fleet).where('id', '=', id).execute();
}

export async function contradictionsByIds(db: Db, fleet: string, ids: readonly string[]): Promise<ContradictionRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('contradictions')
    .selectAll()
    .where('fleet_id', '=', fleet)
    .where('id', 'in', ids as string[])
    .execute();
}

/** Ids of the fleet's contradictions (in one status when given), oldest first, at most `limit`. */
export async function contradictionIds(
  db: Db,
  fleet: string,
  status: ContradictionStatus | null,
  limit: number,
): Promise<string[]> {
  let q = db.selectFrom('contradictions').select('id').where('fleet_id', '=', fleet);
  if (status) q = q.where('status', '=', status);
  return (await q.orderBy('id').limit(limit).execute()).map((r) => r.id);
}

/** The claim's unexpired lease, locked, if any. */
export async function liveLease(
  db: Db,
  fleet: string,
  claimKey: string,
): Promise<{ holder: string; expires_at: Date } | undefined> {
  const r = await sql<{ holder: string; expires_at: Date }>`
    SELECT holder, expires_at FROM adjudication_leases
     WHERE fleet_id = ${fleet} AND claim_key = ${claimKey} AND expires_at > now() FOR UPDATE`.execute(db);
  return r.rows[0];
}

/** Takes the claim's lease for `holder` under a new fencing token from the sequence, for `leaseMs`. */
export async function takeLease(
  db: Db,
  fleet: string,
  l: { claimKey: string; contradictionId: string; holder: string; leaseMs: number },
): Promise<{ fencing_token: string; expires_at: Date }> {
  const r = await sql<{ fencing_token: string; expires_at: Date }>`
    INSERT INTO adjudication_leases (fleet_id, claim_key, contradiction_id, holder, fencing_token, expires_at)
    VALUES (${fleet}, ${l.claimKey}, ${l.contradictionId}, ${l.holder}, nextval('fencing_tokens'), now() + ${`${l.leaseMs} milliseconds`}::interval)
    ON CONFLICT (fleet_id, claim_key) DO UPDATE SET contradiction_id = EXCLUDED.contradiction_id, holder = EXCLUDED.holder,
      fencing_token = EXCLUDED.fencing_token, expires_at = EXCLUDED.expires_at
    RETURNING fencing_token::text, expires_at`.execute(db);
  return r.rows[0]!;
}

/** Whether `fencingToken` is still the claim's current, unexpired lease (the lease row locked). */
export async function leaseHolds(db: Db, fleet: string, claimKey: string, fencingToken: string): Promise<boolean> {
  const r = await sql<{ ok: boolean }>`
    SELECT (fencing_token = ${fencingToken}::bigint AND expires_at > now()) AS ok
      FROM adjudication_leases WHERE fleet_id = ${fleet} AND claim_key = ${claimKey} FOR UPDATE`.execute(db);
  return r.rows[0]?.ok === true;
}

export async function releaseLease(db: Db, fleet: string, claimKey: string, fencingToken: string): Promise<void> {
  await sql`DELETE FROM adjudication_leases WHERE fleet_id = ${fleet} AND claim_key = ${claimKey} AND fencing_token = ${fencingToken}::bigint`.execute(
    db,
  );
}

/**
 * For a reinstatement: a contradiction for each retracted belief that would come back but whose claim holds another
 * ACTIVE belief: the retracted belief is the proposal (its statement, value, evidence, author, and the premises of
 * the justification that holds), the ACTIVE one the existing side; with a ContradictionRaised row each. One
 * statement; returns the ids, ascending.
 */
export async function raiseContradictions(
  db: Db,
  fleet: string,
  r: { reinstatementId: string; actorId: string },
  items: ReadonlyArray<{ belief: number; premises: number[] }>,
): Promise<string[]> {
  if (items.length === 0) return [];
  const data = sql`jsonb_build_object('claimKey', claim_key, 'reinstatementId', ${r.reinstatementId}::text)`;
  const raised = await sql<{ id: string }>`
    WITH raised AS (
      INSERT INTO contradictions (fleet_id, claim_key, existing_id, proposed_statement, proposed_value, proposed_evidence, proposed_author_id,
                                  proposed_derived_from, reinstatement_id, reinstates_id)
      SELECT ${fleet}, s.claim_key, a.id, s.statement, s.value, s.evidence, s.author_id, x.premises::bigint[], ${r.reinstatementId}, s.id
        FROM unnest(${intArray(items.map((i) => i.belief))}::bigint[], ${textArray(items.map((i) => intArray(i.premises)))}::text[]) WITH ORDINALITY AS x(id, premises, ord)
        JOIN beliefs s ON s.fleet_id = ${fleet} AND s.id = x.id
        JOIN beliefs a ON a.fleet_id = s.fleet_id AND a.claim_key = s.claim_key AND a.status = 'ACTIVE'
       ORDER BY x.ord
      RETURNING id, claim_key
    ), ev AS (
      ${insertEvents(fleet, { type: 'ContradictionRaised', actorId: r.actorId, ids: sql`ARRAY[id]`, data }, sql`FROM raised`)}
    )
    SELECT id::text AS id FROM raised ORDER BY raised.id`.execute(db);
  return raised.rows.map((x) => x.id);
}
