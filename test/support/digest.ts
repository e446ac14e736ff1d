import { sql } from 'kysely';
import type { Store } from '../../src/store/engine';

const TABLES = [
  'store_meta',
  'fleets',
  'agents',
  'claims',
  'retractions',
  'beliefs',
  'justifications',
  'justification_premises',
  'effect_kinds',
  'effects',
  'effect_supports',
  'reversals',
  'contradictions',
  'adjudication_leases',
  'events',
] as const;

/** An md5 of every row of every table, as the owner with row security off: equal digests mean nothing was written. */
export async function digestTables(store: Store): Promise<Record<string, string>> {
  return store.db.transaction().execute(async (tx) => {
    await sql`SET LOCAL row_security = off`.execute(tx);
    const out: Record<string, string> = {};
    for (const t of TABLES) {
      const r = await sql<{
        d: string | null;
        n: number;
      }>`SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS d, count(*)::int AS n FROM ${sql.table(t)} x`.execute(
        tx,
      );
      out[t] = `${r.rows[0]!.n}:${r.rows[0]!.d}`;
    }
    return out;
  });
}
