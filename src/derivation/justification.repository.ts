import { sql } from 'kysely';
import type { Db } from '../store/tx';
import type { ReverseRow } from './resettle';
import type { SupportRow } from './settle';

/**
 * The SQL of justifications (and their premises): how beliefs rest on beliefs, so how they fall.
 * Every statement names its fleet on every relation; row-level security stays as the second wall.
 */

/** Inserts one justification with its premises. */
export async function insertJustification(
  db: Db,
  fleet: string,
  beliefId: string,
  premises: readonly string[],
  agentId: string,
): Promise<string> {
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
export async function hasJustification(
  db: Db,
  fleet: string,
  beliefId: string,
  premises: readonly string[],
): Promise<boolean> {
  const r = await sql<{ found: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM justifications j
       WHERE j.fleet_id = ${fleet} AND j.belief_id = ${beliefId}
         AND (SELECT array_agg(p.premise_id ORDER BY p.premise_id) FROM justification_premises p
               WHERE p.fleet_id = ${fleet} AND p.justification_id = j.id)
             = (SELECT array_agg(x ORDER BY x) FROM unnest(${premises as string[]}::bigint[]) AS x)
    ) AS found`.execute(db);
  return r.rows[0]!.found;
}

/**
 * The first of `premises` that `beliefId` reaches going down the derivation graph (itself included).
 * Adding a justification to beliefId with such a premise would close a cycle. Each step probes the
 * premise index for the node reached (the LATERAL with OFFSET 0 is not flattened): as a join, a
 * table without statistics was hash-joined from a sequential scan, whose relation-wide predicate
 * lock made every concurrent justification a serialization conflict (FINDINGS, stress).
 */
export async function firstDescendantAmong(
  db: Db,
  fleet: string,
  beliefId: string,
  premises: readonly string[],
): Promise<string | null> {
  const r = await sql<{ id: string }>`
    WITH RECURSIVE down(id) AS (
      SELECT ${beliefId}::bigint
      UNION
      SELECT n.belief_id FROM down d CROSS JOIN LATERAL (
        SELECT j.belief_id FROM justification_premises p
          JOIN justifications j ON j.fleet_id = p.fleet_id AND j.id = p.justification_id
         WHERE p.fleet_id = ${fleet} AND p.premise_id = d.id OFFSET 0
      ) n
    )
    SELECT id::text AS id FROM down WHERE id = ANY(${premises as string[]}::bigint[]) LIMIT 1`.execute(db);
  return r.rows[0]?.id ?? null;
}

/**
 * The cascade's closure below the root, one row per premise edge of each justification: every
 * ACTIVE, non-grounded belief reachable from the root through justification premises (a recursive
 * walk that stops at grounded and non-ACTIVE beliefs, which cannot fall), with each premise's state.
 * The walk visits each edge of the closure once (UNION keeps one row per belief), and every lookup
 * goes through an index on the id it follows: cost grows with the blast radius, not the store.
 */
export async function closure(db: Db, fleet: string, rootId: string): Promise<SupportRow[]> {
  const r = await sql<{ b: string; j: string; p: string | null; up: boolean | null }>`
    WITH RECURSIVE closure(id) AS (
      SELECT ${rootId}::bigint
      UNION
      SELECT j.belief_id
        FROM closure c
        JOIN justification_premises p ON p.premise_id = c.id AND p.fleet_id = ${fleet}
        JOIN justifications j ON j.id = p.justification_id AND j.fleet_id = ${fleet}
        JOIN beliefs b ON b.id = j.belief_id AND b.fleet_id = ${fleet}
       WHERE b.status = 'ACTIVE' AND NOT b.grounded
    )
    SELECT j.belief_id::text AS b, j.id::text AS j, p.premise_id::text AS p,
           (SELECT pb.status = 'ACTIVE' FROM beliefs pb WHERE pb.fleet_id = ${fleet} AND pb.id = p.premise_id) AS up
      FROM closure c
      JOIN justifications j ON j.belief_id = c.id AND j.fleet_id = ${fleet}
      LEFT JOIN justification_premises p ON p.justification_id = j.id AND p.fleet_id = ${fleet}
     WHERE c.id <> ${rootId}::bigint`.execute(db);
  return r.rows.map((x) => ({
    belief: Number(x.b),
    justification: Number(x.j),
    premise: x.p === null ? null : Number(x.p),
    premiseActive: x.up === true,
  }));
}

/** Beliefs that rest on something this retraction took down but still stand (another justification holds, or grounded). */
export async function survivorIds(db: Db, fleet: string, retractionId: string, limit: number): Promise<string[]> {
  const r = await sql<{ id: string }>`
    SELECT s.id::text AS id FROM (
      SELECT DISTINCT j.belief_id AS id
        FROM beliefs f
        JOIN justification_premises p ON p.fleet_id = f.fleet_id AND p.premise_id = f.id
        JOIN justifications j ON j.fleet_id = p.fleet_id AND j.id = p.justification_id
        JOIN beliefs b ON b.fleet_id = j.fleet_id AND b.id = j.belief_id
       WHERE f.fleet_id = ${fleet} AND f.retraction_id = ${retractionId} AND b.status = 'ACTIVE') s
     ORDER BY s.id LIMIT ${limit}`.execute(db);
  return r.rows.map((x) => x.id);
}

/** One justification of a belief: its premises in id order, those that fell, and whether it holds (every premise ACTIVE). */
export interface JustificationShape {
  id: string;
  belief_id: string;
  premise_ids: string[];
  fallen_ids: string[];
  holds: boolean;
}

/** The justifications of these beliefs, by belief then id. */
export async function justificationsOf(
  db: Db,
  fleet: string,
  beliefIds: readonly string[],
): Promise<JustificationShape[]> {
  const r = await sql<JustificationShape & { fallen_ids: string[] | null }>`
    SELECT j.id::text AS id, j.belief_id::text AS belief_id,
           array_agg(p.premise_id::text ORDER BY p.premise_id) AS premise_ids,
           array_agg(p.premise_id::text ORDER BY p.premise_id) FILTER (WHERE pb.status <> 'ACTIVE') AS fallen_ids,
           bool_and(pb.status = 'ACTIVE') AS holds
      FROM justifications j
      JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
      JOIN beliefs pb ON pb.fleet_id = p.fleet_id AND pb.id = p.premise_id
     WHERE j.fleet_id = ${fleet} AND j.belief_id = ANY(${beliefIds.map(String)}::bigint[])
     GROUP BY j.fleet_id, j.id ORDER BY j.belief_id, j.id`.execute(db);
  return r.rows.map((j) => ({ ...j, fallen_ids: j.fallen_ids ?? [] }));
}

/** (dependent, premise) pairs: the beliefs citing any of `premiseIds` in a justification. */
export async function dependentsOf(
  db: Db,
  fleet: string,
  premiseIds: readonly string[],
): Promise<Array<{ belief_id: string; premise_id: string }>> {
  const r = await sql<{ belief_id: string; premise_id: string }>`
    SELECT DISTINCT j.belief_id::text AS belief_id, p.premise_id::text AS premise_id
      FROM justification_premises p JOIN justifications j ON j.fleet_id = p.fleet_id AND j.id = p.justification_id
     WHERE p.fleet_id = ${fleet} AND p.premise_id = ANY(${premiseIds.map(String)}::bigint[]) ORDER BY 1, 2`.execute(db);
  return r.rows;
}

/**
 * The reverse closure, statement 1 of a reinstatement's reverse cascade: for every belief still down under this retraction (the root
 * left out), each justification with each premise's state, and whether its claim now holds another
 * ACTIVE belief. One read through the retraction's index, whatever the depth.
 */
export async function reverseClosure(
  db: Db,
  fleet: string,
  retractionId: string,
  rootId: string,
): Promise<{ rows: ReverseRow[]; blocked: Set<number> }> {
  const r = await sql<{
    b: string;
    j: string;
    p: string | null;
    st: 'set' | 'active' | 'down' | null;
    blocked: boolean;
  }>`
    WITH down AS MATERIALIZED (
      SELECT s.id, EXISTS (SELECT 1 FROM beliefs a WHERE a.fleet_id = ${fleet} AND a.claim_key = s.claim_key AND a.status = 'ACTIVE') AS blocked
        FROM beliefs s WHERE s.fleet_id = ${fleet} AND s.retraction_id = ${retractionId} AND s.id <> ${rootId}::bigint
    )
    SELECT d.id::text AS b, j.id::text AS j, p.premise_id::text AS p, d.blocked,
           CASE WHEN p.premise_id IS NULL THEN NULL WHEN pb.status = 'ACTIVE' THEN 'active' WHEN pb.retraction_id = ${retractionId} THEN 'set' ELSE 'down' END AS st
      FROM down d
      JOIN justifications j ON j.fleet_id = ${fleet} AND j.belief_id = d.id
      LEFT JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
      LEFT JOIN beliefs pb ON pb.fleet_id = p.fleet_id AND pb.id = p.premise_id`.execute(db);
  const blocked = new Set<number>();
  const rows = r.rows.map((x) => {
    if (x.blocked) blocked.add(Number(x.b));
    return {
      belief: Number(x.b),
      justification: Number(x.j),
      premise: x.p === null ? null : Number(x.p),
      state: x.st ?? 'active',
    };
  });
  return { rows, blocked };
}

/** The root's justifications, each as its premises' states (an empty list: a justification without premises). */
export async function reverseClosureOfRoot(
  db: Db,
  fleet: string,
  rootId: string,
): Promise<{ rows: Array<Array<{ premise: string; state: 'active' | 'down' }>> }> {
  const r = await sql<{ j: string; p: string | null; active: boolean | null }>`
    SELECT j.id::text AS j, p.premise_id::text AS p, pb.status = 'ACTIVE' AS active
      FROM justifications j
      LEFT JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
      LEFT JOIN beliefs pb ON pb.fleet_id = p.fleet_id AND pb.id = p.premise_id
     WHERE j.fleet_id = ${fleet} AND j.belief_id = ${rootId}
     ORDER BY j.id, p.premise_id`.execute(db);
  const by = new Map<string, Array<{ premise: string; state: 'active' | 'down' }>>();
  for (const x of r.rows) {
    const list = by.get(x.j) ?? [];
    by.set(x.j, list);
    if (x.p !== null) list.push({ premise: x.p, state: x.active ? 'active' : 'down' });
  }
  return { rows: [...by.values()] };
}
