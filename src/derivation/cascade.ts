import { markRetracted } from '../belief/belief.repository';
import type { Tx } from '../store/tx';
import { closure } from './justification.repository';
import { settle } from './settle';

/**
 * The JTMS cascade in a constant number of statements, whatever the depth of the blast radius.
 *
 * 1. One statement reads the closure (./justification.repository.ts `closure`): every ACTIVE,
 *    non-grounded belief reachable from the root through justification premises, with each of its
 *    justifications and each premise's status.
 * 2. `settle` (./settle.ts) computes in memory which of them fall and at which level, exactly as a
 *    level-by-level evaluation would; survivors and what rests only on them stay.
 * 3. One statement (belief.repository `markRetracted`) marks the fallen beliefs with the retraction
 *    and their level, and writes their BeliefRetracted event rows in cascade order (`eventRows`:
 *    whole levels, small ones together).
 *
 * The walk visits each edge of the closure once (UNION keeps one row per belief), and every lookup
 * goes through an index on the id it follows: cost grows with the blast radius, not with the store
 * nor with the depth (a statement per level would add a round trip and a plan per level, so a deep
 * chain would pay for its depth).
 */
export async function cascade(
  tx: Tx,
  fleet: string,
  retractionId: string,
  rootId: string,
  actorId: string,
): Promise<number> {
  const { ids, levels } = settle(Number(rootId), await closure(tx, fleet, rootId));
  const events = eventRows(ids, levels);
  const n = await markRetracted(
    tx,
    fleet,
    retractionId,
    actorId,
    { ids: intArray(ids), levels: intArray(levels) },
    {
      depth: intArray(events.depth),
      ids: textArray(events.ids),
      sizes: textArray(events.sizes),
    },
  );
  // The closure was read in this transaction's snapshot; a concurrent change that slipped between
  // the two statements would have failed the transaction, so a shortfall is a bug, never a race.
  if (n !== ids.length) throw new Error(`cascade: ${ids.length} beliefs settled to fall but ${n} were ACTIVE to mark`);
  return n;
}

/**
 * The BeliefRetracted rows of a cascade, in cascade order: consecutive levels share a row up to
 * LEVEL_ROW ids, and a bigger level has a row of its own. A row's `depth` is its first level; a row
 * of several levels lists their sizes (`data.levels`), so every id's level can be read back. Rows,
 * not levels, cost the statement (three foreign keys checked per row): a 100,000-deep chain is 200
 * rows, not 100,000.
 */
export function eventRows(
  ids: readonly number[],
  levels: readonly number[],
): { depth: number[]; ids: string[]; sizes: Array<string | null> } {
  const out = { depth: [] as number[], ids: [] as string[], sizes: [] as Array<string | null> };
  let start = 0;
  const flush = (end: number, sizes: number[]) => {
    if (end === start) return;
    out.depth.push(levels[start]!);
    out.ids.push(intArray(ids.slice(start, end)));
    out.sizes.push(sizes.length > 1 ? `[${sizes.join(',')}]` : null);
    start = end;
  };
  let sizes: number[] = [];
  for (let i = 0; i < ids.length;) {
    let e = i;
    while (e < ids.length && levels[e] === levels[i]) e++;
    if (e - start > LEVEL_ROW && i > start) {
      flush(i, sizes);
      sizes = [];
    }
    sizes.push(e - i);
    i = e;
  }
  flush(ids.length, sizes);
  return out;
}

/** Most ids in an event row that holds several levels (a subscription's LEVEL batch is the same size). */
const LEVEL_ROW = 500;

/** A PostgreSQL array literal of integers: one text parameter, however many elements. */
function intArray(xs: readonly number[]): string {
  return `{${xs.join(',')}}`;
}

/** A PostgreSQL text[] literal of elements that need no escaping inside double quotes (digits, commas, brackets); null as NULL. */
function textArray(xs: ReadonlyArray<string | null>): string {
  return `{${xs.map((x) => (x === null ? 'NULL' : `"${x}"`)).join(',')}}`;
}
