/**
 * Would an IVFFlat index with pgvector's iterative scan answer a LARGE claim-key-prefix search (about
 * 10k of 100k rows) within 10 ms at recall@10 ≥ 0.95, where ranking every row of the prefix exactly
 * does not on a slow machine (FINDINGS §6 read)? An experiment, not the product's search path.
 *
 *   npm run bench -- read --engine postgres --keep      # leaves the database retract_bench_read
 *   npx tsx experiments/prefix_ivfflat.ts [--queries 50] [--lists 200] [--server postgres://…/postgres]
 *
 * On that database (the read benchmark's clustered 512-d beliefs and its three prefixes) it builds
 * an IVFFlat index on the halfvec copy, then, for each prefix and query (a belief's own embedding),
 * compares the top 10 by `ORDER BY embedding_half <=> q LIMIT 10` with the IVFFlat iterative scan
 * against the exact top 10 (same distance, every prefix row ranked), and times both statements alone
 * (no transaction overhead). Exits non-zero when a prefix misses recall ≥ 0.95 at p50 ≤ 10 ms.
 */
import pg from 'pg';
import { DEFAULT_SERVER } from './bench/lib/stores';

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : d;
};
const server = new URL(arg('server', process.env.DATABASE_URL ?? DEFAULT_SERVER));
server.pathname = '/retract_bench_read';
const QUERIES = Number(arg('queries', '50'));
const LISTS = Number(arg('lists', '200'));
const PREFIXES = {
  'prefix 9%, 20 clusters': 'read/g3/',
  'prefix 10%, all clusters': 'read/u',
  'prefix 1%, all clusters': 'read/u3/',
};

const c = new pg.Client({ connectionString: server.toString() });
await c.connect();
const t0 = performance.now();
await c.query(`DROP INDEX IF EXISTS beliefs_prefix_ivf`);
await c.query(`SET maintenance_work_mem = '512MB'`);
await c.query(
  `CREATE INDEX beliefs_prefix_ivf ON beliefs USING ivfflat (embedding_half halfvec_cosine_ops) WITH (lists = ${LISTS}) WHERE status = 'ACTIVE'`,
);
await c.query(`ANALYZE beliefs`);
console.log(`IVFFlat index, ${LISTS} lists, built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const qs = (
  await c.query<{ id: string; v: string }>(
    `SELECT id::text, embedding_half::text AS v FROM beliefs ORDER BY hashint8(id) LIMIT ${QUERIES}`,
  )
).rows;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
let failed = false;
for (const probes of [1, 5, 10]) {
  for (const [label, prefix] of Object.entries(PREFIXES)) {
    const recalls: number[] = [];
    const ivfMs: number[] = [];
    const exactMs: number[] = [];
    for (const q of qs) {
      // No id tie-break: an index scan can only deliver the distance order.
      const stmt = `SELECT id::text FROM beliefs WHERE status = 'ACTIVE' AND claim_key ^@ $1 ORDER BY embedding_half <=> $2::halfvec(512) LIMIT 10`;
      await c.query('BEGIN');
      await c.query(`SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = on`);
      let s = performance.now();
      const exact = (await c.query<{ id: string }>(stmt, [prefix, q.v])).rows.map((r) => r.id);
      exactMs.push(performance.now() - s);
      await c.query('ROLLBACK');
      await c.query('BEGIN');
      await c.query(
        `SET LOCAL ivfflat.probes = ${probes}; SET LOCAL ivfflat.iterative_scan = relaxed_order; SET LOCAL ivfflat.max_probes = ${LISTS}; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`,
      );
      s = performance.now();
      const got = (await c.query<{ id: string }>(stmt, [prefix, q.v])).rows.map((r) => r.id);
      ivfMs.push(performance.now() - s);
      await c.query('ROLLBACK');
      recalls.push(got.filter((x) => exact.includes(x)).length / Math.max(1, exact.length));
    }
    const recall = recalls.reduce((a, b) => a + b, 0) / recalls.length;
    const ok = recall >= 0.95 && pct(ivfMs, 50) <= 10;
    if (probes === 10 && !ok) failed = true;
    console.log(
      `probes ${String(probes).padStart(2)}  ${label.padEnd(26)} recall@10 ${recall.toFixed(3)}  ivfflat p50 ${pct(ivfMs, 50).toFixed(2)} ms p99 ${pct(ivfMs, 99).toFixed(2)} ms  exact p50 ${pct(exactMs, 50).toFixed(2)} ms  ${ok ? 'MET' : 'MISSED'}`,
    );
  }
}
const plan = await c.query(
  `EXPLAIN SELECT id FROM beliefs WHERE status = 'ACTIVE' AND claim_key ^@ 'read/u' ORDER BY embedding_half <=> (SELECT embedding_half FROM beliefs LIMIT 1) LIMIT 10`,
);
console.log(plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
await c.query(`DROP INDEX beliefs_prefix_ivf`);
await c.end();
process.exitCode = failed ? 1 : 0;
