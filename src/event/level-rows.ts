import { intArray } from '../store/pg-array';

/** Most ids in an event row that holds several levels (a subscription's LEVEL batch, tailer.ts LEVEL_BATCH, is the same size). */
const LEVEL_ROW = 500;

/** The event rows of a cascade as three parallel columns: each row's first level, its ids (an int[] literal), its level sizes (JSON, or null). */
export interface LevelRows {
  depth: number[];
  ids: string[];
  sizes: Array<string | null>;
}

/**
 * The event rows of a cascade (BeliefRetracted, BeliefReinstated), in cascade order: consecutive levels share a row
 * up to LEVEL_ROW ids, and a bigger level has a row of its own. A row's `depth` is its first level; a row of several
 * levels lists their sizes (`data.levels`), so every id's level can be read back. Rows, not levels, cost the
 * statement (three foreign keys checked per row): a 100,000-deep chain is 200 rows, not 100,000.
 */
export function levelRows(ids: readonly number[], levels: readonly number[]): LevelRows {
  const out: LevelRows = { depth: [], ids: [], sizes: [] };
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
