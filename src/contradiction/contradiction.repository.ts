import { type Insertable, type Selectable, type Updateable, sql } from 'kysely';
import type { ContradictionStatus, ContradictionTable } from '../store/schema';
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
