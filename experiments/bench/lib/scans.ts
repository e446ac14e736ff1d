import { sql } from 'kysely';
import type { Db } from '../../../src/store/tx';

/** What one relation of `beliefs` (the table or one of its indexes) was scanned for during a call. */
export interface RelationScans {
  name: string;
  /** Scans started: sequential scans for the table, index scans for an index. */
  scans: number;
  /** Index entries (or, for the table, rows) read. */
  read: number;
  /** Heap rows fetched through the index: 0 for an index-only scan over all-visible pages. */
  heap: number;
}

const counters = (tx: Db) =>
  sql<RelationScans>`
    SELECT c.relname AS name, pg_stat_get_xact_numscans(c.oid)::int AS scans,
           pg_stat_get_xact_tuples_returned(c.oid)::int AS read, pg_stat_get_xact_tuples_fetched(c.oid)::int AS heap
      FROM pg_class c
     WHERE c.oid = 'beliefs'::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'beliefs'::regclass)`.execute(
    tx,
  );

/**
 * Runs `fn` in `tx` and returns how it read beliefs: the relations it scanned, from the
 * transaction's own statistics counters (pg_stat_get_xact_*), so it sees inside a function call,
 * where EXPLAIN does not reach.
 */
export async function beliefScans(tx: Db, fn: () => Promise<unknown>): Promise<RelationScans[]> {
  const before = new Map((await counters(tx)).rows.map((r) => [r.name, r]));
  await fn();
  return (await counters(tx)).rows
    .map((r) => {
      const b = before.get(r.name)!;
      return { name: r.name, scans: r.scans - b.scans, read: r.read - b.read, heap: r.heap - b.heap };
    })
    .filter((r) => r.scans > 0)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** "beliefs_pkey: 40 read, 40 from heap; beliefs_prefix_embedding: 10000 read, index only". */
export function describeScans(scans: RelationScans[]): string {
  return scans
    .map(
      (s) =>
        `${s.name === 'beliefs' ? 'seq scan beliefs' : s.name}: ${s.read} read, ${s.heap === 0 ? 'index only' : `${s.heap} from heap`}`,
    )
    .join('; ');
}
