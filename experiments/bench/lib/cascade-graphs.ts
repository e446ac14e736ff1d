import { fmtCount } from './report';
import type { OwnerSql } from './stores';

/**
 * The cascade benchmark's graphs, bulk-loaded as the owner. Every shape has n beliefs, root first
 * (belief root+i, 0 ≤ i < n); belief i > 0 has one justification resting on `parent(i)`:
 *  - `tree`: fan-out 4 (depth log₄ n); every belief falls;
 *  - `dag`: the tree parent and that parent's left neighbour in one justification (diamonds), and
 *    every i ≡ 5 (mod 10) also holds a second justification from an anchor belief OUTSIDE the blast
 *    radius, so a tenth of the beliefs survive;
 *  - `chain`: i rests on i-1 (depth n-1);
 *  - `comb`: a chain on the even beliefs (i on i-2), each with a side branch (odd i on i-1): depth n/2;
 *  - `star`: every belief rests on the root (depth 1, n-1 dependents of one premise).
 */
export const FLEET = 'bench';
export const SHAPES = ['tree', 'dag', 'chain', 'comb', 'star'] as const;
export type Shape = (typeof SHAPES)[number];

/** SQL for the premise of belief `i` (an offset from the root) in each shape. */
const PARENT: Record<Shape, string> = {
  tree: '(i - 1) / 4',
  dag: '(i - 1) / 4',
  chain: 'i - 1',
  comb: 'CASE WHEN i % 2 = 0 THEN i - 2 ELSE i - 1 END',
  star: '0',
};

export interface Graph {
  shape: Shape;
  n: number;
  copy: 'service' | 'bare' | 'perBelief' | 'explain';
  /** Repetition number: service and bare copies are generated once per repetition. */
  rep: number;
  /** Belief ids root … root+n-1 (the blast radius, root first); anchors follow. */
  root: number;
  anchors: number;
  firstJustification: number;
}

/** Beliefs of the DAG that survive: i ≡ 5 (mod 10), 1 ≤ i < n. */
function dagSurvivors(n: number): number {
  return n > 5 ? Math.floor((n - 1 - 5) / 10) + 1 : 0;
}

export function expectedRetracted(shape: Shape, n: number): number {
  return shape === 'dag' ? n - dagSurvivors(n) : n;
}

/** The deepest cascade level of each shape but the dag (the root is level 0); for the dag, the tree's, an upper bound. */
export function expectedLevels(shape: Shape, n: number): number {
  if (shape === 'chain') return n - 1;
  if (shape === 'comb') return Math.floor(n / 2);
  if (shape === 'star') return n > 1 ? 1 : 0;
  let d = 0;
  for (let i = n - 1; i > 0; i = Math.floor((i - 1) / 4)) d++;
  return d;
}

export class Loader {
  nextBelief = 1;
  nextJustification = 1;
  beliefs = 0;
  constructor(
    private readonly q: OwnerSql,
    readonly agentId: string,
    private readonly pool: number,
  ) {}

  /** Inserts claims, beliefs (embedding from the vector pool), justifications and premises of one graph copy. */
  async graph(shape: Shape, n: number, copy: Graph['copy'], rep = 0): Promise<Graph> {
    const B = this.nextBelief;
    const J = this.nextJustification;
    const A = shape === 'dag' ? Math.max(1, Math.floor(n / 100)) : 0;
    const m = n + A;
    const prefix = `bench/${shape}-${fmtCount(n)}-${copy}${rep ? `-${rep}` : ''}/`;
    await this.beliefRows(B, m, prefix, `i = 0 OR i >= ${n}`);
    await this.q.query(`INSERT INTO justifications (id, fleet_id, belief_id, created_by) OVERRIDING SYSTEM VALUE
      SELECT ${J} + i, '${FLEET}', ${B} + i, ${this.agentId} FROM generate_series(1, ${n - 1}) i`);
    await this.q.query(`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
      SELECT ${J} + i, ${B} + ${PARENT[shape]}, '${FLEET}' FROM generate_series(1, ${n - 1}) i`);
    if (shape === 'dag') {
      // The tree parent's left neighbour: a second premise in the same justification (diamonds).
      await this.q.query(`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
        SELECT ${J} + i, ${B} + (i - 1) / 4 - 1, '${FLEET}' FROM generate_series(5, ${n - 1}) i`);
      // A tenth hold a second justification resting on an anchor outside the blast radius.
      await this.q.query(`INSERT INTO justifications (id, fleet_id, belief_id, created_by) OVERRIDING SYSTEM VALUE
        SELECT ${J + n} + i, '${FLEET}', ${B} + i, ${this.agentId} FROM generate_series(1, ${n - 1}) i WHERE i % 10 = 5`);
      await this.q.query(`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
        SELECT ${J + n} + i, ${B + n} + i % ${A}, '${FLEET}' FROM generate_series(1, ${n - 1}) i WHERE i % 10 = 5`);
    }
    this.nextBelief += m;
    this.nextJustification += 2 * n;
    return { shape, n, copy, rep, root: B, anchors: A, firstJustification: J };
  }

  /**
   * U beliefs unrelated to any blast radius, in groups of five: the first grounded, the others
   * derived from it, the third to fifth also from their predecessor (chains with diamonds).
   */
  async unrelated(u: number, log: (s: string) => void): Promise<void> {
    const chunk = 200_000;
    for (let s = 0; s < u; s += chunk) {
      const e = Math.min(u, s + chunk);
      const B = this.nextBelief + s;
      const J = this.nextJustification + s;
      await this.beliefRows(B, e - s, `bench/unrelated/${s}/`, `(${s} + i) % 5 = 0`);
      await this.q.query(`INSERT INTO justifications (id, fleet_id, belief_id, created_by) OVERRIDING SYSTEM VALUE
        SELECT ${J} + i, '${FLEET}', ${B} + i, ${this.agentId} FROM generate_series(0, ${e - s - 1}) i WHERE (${s} + i) % 5 <> 0`);
      await this.q.query(`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
        SELECT ${J} + i, ${B} + i - (${s} + i) % 5, '${FLEET}' FROM generate_series(0, ${e - s - 1}) i WHERE (${s} + i) % 5 <> 0
        UNION ALL
        SELECT ${J} + i, ${B} + i - 1, '${FLEET}' FROM generate_series(0, ${e - s - 1}) i WHERE (${s} + i) % 5 >= 2`);
      log(`  unrelated beliefs ${fmtCount(e)} / ${fmtCount(u)}`);
    }
    this.nextBelief += u;
    this.nextJustification += u;
  }

  private async beliefRows(B: number, m: number, prefix: string, grounded: string): Promise<void> {
    await this.q.query(
      `INSERT INTO claims (fleet_id, key) SELECT '${FLEET}', '${prefix}' || i FROM generate_series(0, ${m - 1}) i`,
    );
    await this.q
      .query(`INSERT INTO beliefs (id, fleet_id, claim_key, statement, author_id, grounded, embedding) OVERRIDING SYSTEM VALUE
      SELECT ${B} + i, '${FLEET}', '${prefix}' || i, 'benchmark belief ' || i, ${this.agentId}, ${grounded}, v.e
        FROM generate_series(0, ${m - 1}) i JOIN bench_vectors v ON v.k = (${B} + i) % ${this.pool}`);
    // The BeliefAsserted events the service would have written (the invariant checker asks for them).
    await this.q.query(`INSERT INTO events (fleet_id, type, ids, actor_id)
      SELECT '${FLEET}', 'BeliefAsserted', array_agg(${B} + i ORDER BY i), ${this.agentId} FROM generate_series(0, ${m - 1}) i GROUP BY i / 10000`);
    this.beliefs += m;
  }
}

/** A pool of distinct pseudo-random unit vectors (deterministic), or one constant unit vector. */
export async function vectorPool(q: OwnerSql, kind: 'pool' | 'constant', size: number): Promise<number> {
  if (kind === 'constant') {
    await q.query(
      `CREATE TEMP TABLE bench_vectors AS SELECT 0 AS k, array_fill((1 / sqrt(512))::real, ARRAY[512])::vector(512) AS e`,
    );
    return 1;
  }
  await q.query(`CREATE TEMP TABLE bench_vectors AS
    WITH raw AS (SELECT k, d, hashtext(k || ':' || d)::float8 / 2147483648.0 AS x FROM generate_series(0, ${size - 1}) k, generate_series(1, 512) d),
         norm AS (SELECT k, sqrt(sum(x * x)) AS l FROM raw GROUP BY k)
    SELECT k, array_agg((x / l)::real ORDER BY d)::vector(512) AS e FROM raw JOIN norm USING (k) GROUP BY k`);
  await q.query(`ALTER TABLE bench_vectors ADD PRIMARY KEY (k)`);
  return size;
}
