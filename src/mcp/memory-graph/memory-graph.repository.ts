import { sql } from 'kysely';
import type { Db } from '../../store/tx';

/** One ACTIVE belief of the memory graph: what the graph is rebuilt from. */
export interface GraphRow {
  id: string;
  claim_key: string;
  value: unknown;
}

/**
 * The fleet's ACTIVE beliefs whose claim key starts with `prefix` (`^@`, starts_with: the same
 * range the "C"-collated index beliefs_prefix_embedding serves), in id order, which is the order
 * they were written in: the reference server keeps entities and observations in insertion order.
 */
export async function activeUnderPrefix(db: Db, fleet: string, prefix: string): Promise<GraphRow[]> {
  const { rows } = await sql<GraphRow>`
    SELECT id::text AS id, claim_key, value FROM beliefs
     WHERE fleet_id = ${fleet} AND status = 'ACTIVE' AND claim_key ^@ ${prefix}
     ORDER BY beliefs.id`.execute(db);
  return rows;
}

/** The ACTIVE belief on each of `keys` that has one: claim key → belief id. */
export async function activeIdsByKeys(db: Db, fleet: string, keys: readonly string[]): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const { rows } = await sql<{ id: string; claim_key: string }>`
    SELECT b.id::text AS id, b.claim_key FROM unnest(${keys as string[]}::text[]) AS k(key)
      JOIN beliefs b ON b.fleet_id = ${fleet} AND b.claim_key = k.key AND b.claim_key COLLATE "C" = k.key AND b.status = 'ACTIVE'`.execute(
    db,
  );
  return new Map(rows.map((r) => [r.claim_key, r.id]));
}
