/**
 * The JTMS fixpoint over a closure already read from the store, in memory.
 *
 * Input: the root and, for every other belief of the closure (the ACTIVE, non-grounded beliefs
 * reachable from the root through justification premises), each of its justifications with each
 * premise's state: in the closure, or outside it and ACTIVE, or outside it and not ACTIVE. Only
 * beliefs of the closure can fall, so a premise outside it keeps its state for the whole cascade.
 *
 * Output: the beliefs that fall, each with its cascade level, exactly as a level-by-level
 * evaluation defines it: the root falls at level 0; a belief falls at level d when one of its
 * premises fell at level d-1 and every one of its justifications then has a premise that is not
 * ACTIVE (fallen at a level below d, or down before the cascade began). A justification without
 * premises, or whose premises are all ACTIVE outside the closure, always holds.
 *
 * Work and memory are linear in the closure's premise edges: each edge out of a fallen belief is
 * visited once, and a justification is broken at most once.
 */

/** One premise edge of a closure belief's justification, as the closure statement reads it. */
export interface SupportRow {
  belief: number;
  justification: number;
  /** null for a justification without premises. */
  premise: number | null;
  premiseActive: boolean;
}

export interface Settled {
  /** Fallen beliefs in cascade order: level, then id; the root first. */
  ids: number[];
  levels: number[];
  /** Beliefs of the closure that stand (some justification holds). */
  survivors: number;
}

export function settle(root: number, rows: readonly SupportRow[]): Settled {
  // Dense numbering of closure beliefs and justifications keeps the state in typed arrays.
  const beliefIndex = new IntIndex(rows.length);
  const beliefIds: number[] = [];
  const jIndex = new IntIndex(rows.length);
  const jBelief: number[] = [];
  for (const r of rows) {
    let b = beliefIndex.get(r.belief);
    if (b < 0) {
      b = beliefIndex.set(r.belief, beliefIds.length);
      beliefIds.push(r.belief);
    }
    if (jIndex.get(r.justification) < 0) {
      jIndex.set(r.justification, jBelief.length);
      jBelief.push(b);
    }
  }
  const nb = beliefIds.length;
  const nj = jBelief.length;
  // A justification is broken once any premise is down; `standing` counts a belief's unbroken ones.
  const broken = new Uint8Array(nj);
  for (const r of rows) {
    if (r.premise !== null && r.premise !== root && beliefIndex.get(r.premise) < 0 && !r.premiseActive)
      broken[jIndex.get(r.justification)] = 1;
  }
  const standing = new Int32Array(nb);
  for (let j = 0; j < nj; j++) if (!broken[j]) standing[jBelief[j]!]!++;

  // Edges out of closure premises (root = -1 index), grouped by premise: CSR arrays.
  const ROOT = nb;
  const degree = new Int32Array(nb + 2);
  // The dense index of a row's premise when it is in the closure (the root is ROOT), else -1.
  const premiseAt = new Int32Array(rows.length);
  rows.forEach((r, i) => {
    premiseAt[i] = r.premise === null ? -1 : r.premise === root ? ROOT : beliefIndex.get(r.premise);
    if (premiseAt[i]! >= 0) degree[premiseAt[i]! + 1]!++;
  });
  for (let i = 1; i < degree.length; i++) degree[i]! += degree[i - 1]!;
  const fill = degree.slice();
  const edgeJ = new Int32Array(degree[nb + 1]!);
  rows.forEach((r, i) => {
    if (premiseAt[i]! >= 0) edgeJ[fill[premiseAt[i]!]!++] = jIndex.get(r.justification);
  });

  // Breadth first over one queue of dense indices; each level is the run [from, to) of the queue.
  const fallen = new Uint8Array(nb);
  const queue = new Int32Array(nb + 1);
  queue[0] = ROOT;
  const ids: number[] = [root];
  const levels: number[] = [0];
  let from = 0;
  let to = 1;
  for (let d = 1; from < to; d++) {
    let end = to;
    for (let q = from; q < to; q++) {
      const p = queue[q]!;
      for (let e = degree[p]!; e < degree[p + 1]!; e++) {
        const j = edgeJ[e]!;
        const b = jBelief[j]!;
        if (!broken[j]) {
          broken[j] = 1;
          standing[b]!--;
        }
        // A dependent of what fell at d-1 falls at d once nothing holds it.
        if (standing[b] === 0 && !fallen[b]) {
          fallen[b] = 1;
          queue[end++] = b;
        }
      }
    }
    if (end - to > 1) queue.subarray(to, end).sort((a, b) => beliefIds[a]! - beliefIds[b]!);
    for (let q = to; q < end; q++) {
      ids.push(beliefIds[queue[q]!]!);
      levels.push(d);
    }
    from = to;
    to = end;
  }
  return { ids, levels, survivors: nb - (ids.length - 1) };
}

/**
 * Ids (integers below 2^53) to dense indices: open addressing over typed arrays. A Map of 100k
 * number keys cost several times the whole settle here.
 */
class IntIndex {
  private readonly keys: Float64Array;
  private readonly values: Int32Array;
  private readonly mask: number;
  constructor(capacity: number) {
    let size = 16;
    while (size < capacity * 2) size *= 2;
    this.keys = new Float64Array(size);
    this.values = new Int32Array(size).fill(-1);
    this.mask = size - 1;
  }
  private slot(key: number): number {
    // Multiplicative hashing of the low and high 32 bits.
    let h = Math.imul((key % 4294967296) | 0, 0x9e3779b1) ^ Math.imul(Math.floor(key / 4294967296) | 0, 0x85ebca6b);
    h &= this.mask;
    while (this.values[h] !== -1 && this.keys[h] !== key) h = (h + 1) & this.mask;
    return h;
  }
  get(key: number): number {
    return this.values[this.slot(key)]!;
  }
  set(key: number, value: number): number {
    const h = this.slot(key);
    this.keys[h] = key;
    this.values[h] = value;
    return value;
  }
}
