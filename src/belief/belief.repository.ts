import { sql } from 'kysely';
import type { Db } from '../store/tx';

/** Plain queries over beliefs, justifications and claims. RLS scopes each to the transaction's fleet. */

export interface BeliefRow {
  id: string;
  fleet_id: string;
  claim_key: string;
  statement: string;
  value: unknown;
  evidence: string | null;
  author_id: string;
  grounded: boolean;
  status: 'ACTIVE' | 'RETRACTED';
  created_at: Date;
  retracted_at: Date | null;
  retraction_id: string | null;
  retraction_depth: number | null;
}

export const BELIEF_COLUMNS = [
  'id', 'fleet_id', 'claim_key', 'statement', 'value', 'evidence', 'author_id', 'grounded', 'status',
  'created_at', 'retracted_at', 'retraction_id', 'retraction_depth',
] as const;

export async function beliefsByIds(db: Db, ids: readonly string[]): Promise<BeliefRow[]> {
  if (ids.length === 0) return [];
  return (await db.selectFrom('beliefs').select(BELIEF_COLUMNS).where('id', 'in', ids as string[]).execute()) as BeliefRow[];
}

export async function activeBeliefForClaim(db: Db, fleet: string, claimKey: string): Promise<BeliefRow | undefined> {
  return (await db
    .selectFrom('beliefs')
    .select(BELIEF_COLUMNS)
    .where('fleet_id', '=', fleet)
    .where('claim_key', '=', claimKey)
    .where('status', '=', 'ACTIVE')
    .executeTakeFirst()) as BeliefRow | undefined;
}

/** Locks the premises (FOR SHARE, so a concurrent retraction must wait or fail) and returns them. */
export async function lockBeliefs(db: Db, ids: readonly string[], mode: 'share' | 'update'): Promise<BeliefRow[]> {
  if (ids.length === 0) return [];
  const q = db.selectFrom('beliefs').select(BELIEF_COLUMNS).where('id', 'in', ids as string[]).orderBy('id');
  return (await (mode === 'share' ? q.forShare() : q.forUpdate()).execute()) as BeliefRow[];
}

/** Creates the claim row if needed and locks it: the serialisation point for writes on one claim. */
export async function lockClaim(db: Db, fleet: string, key: string): Promise<{ version: string; visibleIn: (snapshot: string) => Promise<boolean> }> {
  await db.insertInto('claims').values({ fleet_id: fleet, key }).onConflict((oc) => oc.doNothing()).execute();
  const row = await db
    .selectFrom('claims')
    .select(['version', sql<string | null>`last_tx::text`.as('last_tx')])
    .where('fleet_id', '=', fleet)
    .where('key', '=', key)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return {
    version: String(row.version),
    /** True when the claim's last write was already visible in the given READ snapshot. */
    visibleIn: async (snapshot: string) => {
      if (!row.last_tx) return true;
      const r = await sql<{ v: boolean }>`SELECT pg_visible_in_snapshot(${row.last_tx}::xid8, ${snapshot}::pg_snapshot) AS v`.execute(db);
      return r.rows[0]!.v;
    },
  };
}

export async function bumpClaim(db: Db, fleet: string, key: string): Promise<void> {
  await sql`UPDATE claims SET version = version + 1, last_tx = pg_current_xact_id() WHERE fleet_id = ${fleet} AND key = ${key}`.execute(db);
}

/** Inserts one justification with its premises. */
export async function insertJustification(db: Db, fleet: string, beliefId: string, premises: readonly string[], agentId: string): Promise<string> {
  const j = await db
    .insertInto('justifications')
    .values({ fleet_id: fleet, belief_id: beliefId, created_by: agentId })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('justification_premises')
    .values(premises.map((p) => ({ justification_id: j.id, premise_id: p, fleet_id: fleet })))
    .execute();
  return j.id;
}

/** True when `beliefId` already has a justification with exactly this premise set. */
export async function hasJustification(db: Db, beliefId: string, premises: readonly string[]): Promise<boolean> {
  const r = await sql<{ found: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM justifications j
       WHERE j.belief_id = ${beliefId}
         AND (SELECT array_agg(p.premise_id ORDER BY p.premise_id) FROM justification_premises p WHERE p.justification_id = j.id)
             = (SELECT array_agg(x ORDER BY x) FROM unnest(${premises as string[]}::bigint[]) AS x)
    ) AS found`.execute(db);
  return r.rows[0]!.found;
}

/**
 * The first of `premises` that `beliefId` reaches going down the derivation graph (itself included).
 * Adding a justification to beliefId with such a premise would close a cycle.
 */
export async function firstDescendantAmong(db: Db, beliefId: string, premises: readonly string[]): Promise<string | null> {
  const r = await sql<{ id: string }>`
    WITH RECURSIVE down(id) AS (
      SELECT ${beliefId}::bigint
      UNION
      SELECT j.belief_id FROM down d
        JOIN justification_premises p ON p.premise_id = d.id
        JOIN justifications j ON j.id = p.justification_id
    )
    SELECT id::text AS id FROM down WHERE id = ANY(${premises as string[]}::bigint[]) LIMIT 1`.execute(db);
  return r.rows[0]?.id ?? null;
}
