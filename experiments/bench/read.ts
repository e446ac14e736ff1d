import os from 'node:os';
import { sql } from 'kysely';
import { takeReadPoint } from '../../src/belief/snapshot';
import { EF_SEARCH, EXACT_PREFIX_MAX, RERANK_FACTOR, nearestBeliefs } from '../../src/belief/nearest.repository';
import { beliefScans, describeScans } from './lib/scans';
import { searchInTx } from '../../src/belief/nearest.repository';
import { readTx } from '../../src/store/tx';
import type { Bench, BenchOptions, BenchResult, Cell, Target } from './lib/bench';
import { rng } from './lib/prng';
import { fmtCount, fmtMs, phaseTimer } from './lib/report';
import { freshDb } from './lib/stores';
import { lineChart } from './lib/svg';

/**
 * The READ benchmark: recall@10 and latency of the real search path (searchInTx of
 * src/api/types/search.ts, i.e. src/belief/nearest.ts: HNSW with iterative scan, or exact ranking
 * inside a small enough claim-key prefix; in a fleet read transaction with its read point) against
 * exact search (full-precision distance, index scans disabled), over N beliefs with clustered
 * 512-d embeddings, at several ef_search values, without a filter and with three prefix filters:
 * 9 % of the rows in 20 of the 200 clusters, 10 % and 1 % of the rows spread over every cluster.
 */

const FLEET = 'bench';
const DIM = 512;
const CENTRES = 200;
/** Per-dimension standard deviation of a point's noise around its centre (noise norm ≈ σ·√512 ≈ 0.79). */
const POINT_SIGMA = 0.035;
/** Per-dimension standard deviation of a query's offset from the data point it starts from (norm ≈ 0.45). */
const QUERY_SIGMA = 0.02;
const QUERIES = 200;
const K = 10;
const EFS = [40, 100, 200];
/**
 * Claim keys: belief i is in cluster i mod 200 and in slot A = ⌊i / 200⌋ mod 100, which is
 * independent of its cluster. A < 10 → 'read/u<A>/<i>'; otherwise 'read/g<i mod 10>/<i>'.
 */
const keyOf = (i: number) => {
  const a = Math.floor(i / CENTRES) % 100;
  return a < 10 ? `read/u${a}/${i}` : `read/g${i % 10}/${i}`;
};
const FILTERS = {
  none: null,
  'prefix 9%, 20 clusters': 'read/g3/',
  'prefix 10%, all clusters': 'read/u',
  'prefix 1%, all clusters': 'read/u3/',
} as const;
type Filter = keyof typeof FILTERS;

function unit(v: Float64Array): Float64Array {
  let s = 0;
  for (const x of v) s += x * x;
  const l = Math.sqrt(s);
  for (let i = 0; i < v.length; i++) v[i]! /= l;
  return v;
}

const literal = (v: Float64Array) => `[${Array.from(v, (x) => x.toFixed(6)).join(',')}]`;

/** A point: centre + N(0, σ²) per dimension, normalised. */
function around(centre: Float64Array, sigma: number, r: ReturnType<typeof rng>): Float64Array {
  const v = new Float64Array(DIM);
  for (let d = 0; d < DIM; d++) v[d] = centre[d]! + sigma * r.normal();
  return unit(v);
}

interface Config {
  ef: number | 'exact';
  filter: Filter;
}

interface Measured {
  ef: number | 'exact';
  filter: string;
  recall: number;
  minRecall: number;
  p50: number;
  p99: number;
  mean: number;
  plan: string;
  loadavg: number[];
}

/** The scans of a plan, in order: the indexes (or Seq Scan) it reads. */
function planNode(text: string): string {
  const nodes = [...text.matchAll(/(Index Only Scan|Index Scan|Bitmap Index Scan) (?:using|on) (\w+)|(Seq Scan)/g)].map(
    (m) => (m[3] ? 'Seq Scan + sort' : `${m[1]} ${m[2]}`),
  );
  return nodes.length ? [...new Set(nodes)].join(' + ') : text.split('\n')[0]!;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function run(opts: BenchOptions): Promise<BenchResult> {
  const n = opts.size ?? (opts.engine === 'postgres' ? 100_000 : 20_000);
  // Slot A = ⌊i/CENTRES⌋ mod 100 (independent of the cluster) takes all 100 values only from CENTRES × 100 beliefs on:
  // below that the prefix filters do not hold the fractions they are named for (the 9 % one is empty).
  if (n < CENTRES * 100)
    throw new Error(
      `--size must be at least ${CENTRES * 100} for read (the prefix filters' fractions need every slot A = ⌊i/${CENTRES}⌋ mod 100), got ${n}`,
    );
  const batch = Number(opts.flags.batch ?? 2000);
  const phases: Record<string, number> = {};
  const caveats: string[] = [];
  const time = phaseTimer(phases);
  const r = rng(20261201);
  const centres = Array.from({ length: CENTRES }, () => {
    const c = new Float64Array(DIM);
    for (let d = 0; d < DIM; d++) c[d] = r.normal();
    return unit(c);
  });
  const pointOf = (i: number) => around(centres[i % CENTRES]!, POINT_SIGMA, rng(1_000_003 * (i + 1)));

  const db = await time('create database', () => freshDb(opts.engine, opts.serverUrl, 'retract_bench_read'));
  let versions: BenchResult['engineVersions'] = null;
  const measured: Measured[] = [];
  let indexdef = '';
  try {
    const q = await db.owner();
    try {
      [versions] = await q.query<{ server: string; vector: string | null }>(
        `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector`,
      );
      await q.query(`INSERT INTO fleets (id) VALUES ('${FLEET}')`);
      const [agent] = await q.query<{ id: string }>(
        `INSERT INTO agents (fleet_id, name, scopes) VALUES ('${FLEET}', 'reader', '{beliefs:read}') RETURNING id::text AS id`,
      );
      const hnsw = await q.query<{ indexname: string; indexdef: string }>(
        `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'beliefs' AND indexdef ILIKE '%using hnsw%'`,
      );
      indexdef = hnsw.map((i) => i.indexdef).join('; ');
      for (const i of hnsw) await q.query(`DROP INDEX ${i.indexname}`);
      await time('bulk insert (INSERT … SELECT FROM unnest, batches)', async () => {
        for (let s = 0; s < n; s += batch) {
          const e = Math.min(n, s + batch);
          const keys: string[] = [];
          const statements: string[] = [];
          const vecs: string[] = [];
          for (let i = s; i < e; i++) {
            keys.push(keyOf(i));
            statements.push(`benchmark belief ${i} of cluster ${i % CENTRES}`);
            vecs.push(literal(pointOf(i)));
          }
          await q.query(`INSERT INTO claims (fleet_id, key) SELECT '${FLEET}', k FROM unnest($1::text[]) AS k`, [keys]);
          await q.query(
            `INSERT INTO beliefs (fleet_id, claim_key, statement, author_id, grounded, embedding)
             SELECT '${FLEET}', k, st, ${agent!.id}, true, v::vector(512) FROM unnest($1::text[], $2::text[], $3::text[]) AS u(k, st, v)`,
            [keys, statements, vecs],
          );
          if ((e / batch) % 10 === 0 || e === n) opts.log(`read: ${fmtCount(e)} / ${fmtCount(n)} beliefs inserted`);
        }
      });
      await time('build HNSW index', async () => {
        if (opts.engine === 'postgres') {
          await q.query(`SET maintenance_work_mem = '1GB'`);
          await q.query(`SET max_parallel_maintenance_workers = 2`);
          await q.query(`ALTER TABLE beliefs SET (parallel_workers = 2)`);
        } else await q.query(`SET maintenance_work_mem = '512MB'`);
        for (const i of hnsw) await q.query(i.indexdef);
        if (opts.engine === 'postgres') await q.query(`ALTER TABLE beliefs RESET (parallel_workers)`);
      });
      await time('vacuum analyze', () => q.query(`VACUUM (ANALYZE) beliefs, claims`));
    } finally {
      await q.close();
    }

    const queries = Array.from({ length: QUERIES }, (_, j) => {
      const qr = rng(77_777 + j);
      const base = pointOf(Math.floor(qr.u() * n));
      return literal(around(base, QUERY_SIGMA, qr));
    });

    const store = await db.open(2);
    try {
      /**
       * One search as search() runs it (read point, then searchInTx), returning ids nearest first.
       * `exact` is the truth: full-precision distance over the filter's rows, index scans disabled.
       */
      const search = (vec: string, c: Config) =>
        readTx(store, FLEET, async (tx) => {
          await takeReadPoint(tx, FLEET);
          const prefix = FILTERS[c.filter];
          if (c.ef !== 'exact')
            return (
              await searchInTx(tx, FLEET, { vector: vec, k: K, includeRetracted: false, prefix, ef: c.ef })
            ).hits.map((h) => h.belief.id);
          await sql`SELECT set_config('enable_indexscan', 'off', true)`.execute(tx);
          const rows = await sql<{ id: string }>`
            SELECT id::text FROM beliefs WHERE fleet_id = ${FLEET} AND status = 'ACTIVE' ${prefix ? sql`AND starts_with(claim_key, ${prefix})` : sql``}
             ORDER BY embedding <=> ${vec}::vector, id LIMIT ${K}`.execute(tx);
          return rows.rows.map((x) => x.id);
        });
      /** The plan search() picks for the first query (and, for the exact truth, the planner's node). */
      const planOf = (c: Config) =>
        readTx(store, FLEET, async (tx) => {
          const prefix = FILTERS[c.filter];
          if (c.ef === 'exact') {
            await sql`SELECT set_config('enable_indexscan', 'off', true)`.execute(tx);
            const p = await sql<{
              'QUERY PLAN': string;
            }>`EXPLAIN SELECT id FROM beliefs WHERE fleet_id = ${FLEET} AND status = 'ACTIVE'
                ${prefix ? sql`AND starts_with(claim_key, ${prefix})` : sql``} ORDER BY embedding <=> ${queries[0]!}::vector, id LIMIT ${K}`.execute(
              tx,
            );
            return planNode(p.rows.map((x) => x['QUERY PLAN']).join('\n'));
          }
          const near = await nearestBeliefs(tx, FLEET, {
            vector: queries[0]!,
            k: K,
            includeRetracted: false,
            prefix,
            ef: c.ef,
          });
          // Both searches run inside a function, where EXPLAIN does not reach: report what it scanned.
          return `${near.plan}: ${describeScans(await beliefScans(tx, () => near.run(tx)))}`;
        });

      const filters = Object.keys(FILTERS) as Filter[];
      const truth = new Map<string, string[][]>();
      for (const filter of filters) {
        opts.log(`read: exact search (${filter}) for ${QUERIES} queries`);
        const lat: number[] = [];
        const ids: string[][] = [];
        await time('exact searches', async () => {
          for (const v of queries) {
            const t0 = performance.now();
            ids.push(await search(v, { ef: 'exact', filter }));
            lat.push(performance.now() - t0);
          }
        });
        if (ids.some((x) => x.length < K)) throw new Error(`exact search (${filter}) returned fewer than ${K} hits`);
        truth.set(filter, ids);
        lat.sort((a, b) => a - b);
        measured.push({
          ef: 'exact',
          filter,
          recall: 1,
          minRecall: 1,
          p50: pct(lat, 50),
          p99: pct(lat, 99),
          mean: lat.reduce((a, b) => a + b, 0) / lat.length,
          plan: await planOf({ ef: 'exact', filter }),
          loadavg: os.loadavg(),
        });
      }
      // Warm the index into the cache before timing.
      await time('warm-up', async () => {
        for (const v of queries.slice(0, 50)) await search(v, { ef: 200, filter: 'none' });
      });
      for (const filter of filters) {
        for (const ef of EFS) {
          const lat: number[] = [];
          const recalls: number[] = [];
          const t = truth.get(filter)!;
          await time('approximate searches', async () => {
            for (let j = 0; j < queries.length; j++) {
              const t0 = performance.now();
              const got = await search(queries[j]!, { ef, filter });
              lat.push(performance.now() - t0);
              const want = new Set(t[j]!);
              recalls.push(got.filter((id) => want.has(id)).length / K);
            }
          });
          lat.sort((a, b) => a - b);
          const m: Measured = {
            ef,
            filter,
            recall: recalls.reduce((a, b) => a + b, 0) / recalls.length,
            minRecall: Math.min(...recalls),
            p50: pct(lat, 50),
            p99: pct(lat, 99),
            mean: lat.reduce((a, b) => a + b, 0) / lat.length,
            plan: await planOf({ ef, filter }),
            loadavg: os.loadavg(),
          };
          measured.push(m);
          opts.log(
            `read: ef_search ${ef}, filter ${filter}: recall@10 ${m.recall.toFixed(3)}, p50 ${fmtMs(m.p50)}, p99 ${fmtMs(m.p99)} (${m.plan})`,
          );
        }
      }
    } finally {
      await store.close();
    }
  } finally {
    if (opts.flags.keep !== true) await time('drop database', () => db.drop());
  }

  caveats.push(
    `embeddings: ${CENTRES} cluster centres drawn N(0, I) in ${DIM} dimensions and normalised; belief i belongs to cluster i mod ${CENTRES} and is centre + N(0, ${POINT_SIGMA}²·I) (noise norm ≈ ${(POINT_SIGMA * Math.sqrt(DIM)).toFixed(2)}), normalised; PRNG mulberry32 + Box–Muller, seeded`,
    `queries: ${QUERIES} = a uniformly chosen belief's vector + N(0, ${QUERY_SIGMA}²·I) (offset norm ≈ ${(QUERY_SIGMA * Math.sqrt(DIM)).toFixed(2)}), normalised`,
    `claim keys: belief i is in cluster i mod ${CENTRES} and slot A = ⌊i/${CENTRES}⌋ mod 100 (independent of the cluster); A < 10 → 'read/u<A>/<i>', else 'read/g<i mod 10>/<i>'. Filters: '${FILTERS['prefix 9%, 20 clusters']}' = i mod 10 = 3 and A ≥ 10 (9 %, all in the 20 clusters ≡ 3 mod 10, so 90 % of the queries, drawn from the other clusters, have no neighbour in the prefix nearby — the hard case for a filtered HNSW scan); '${FILTERS['prefix 10%, all clusters']}' = A < 10 (10 %, every cluster); '${FILTERS['prefix 1%, all clusters']}' = A = 3 (1 %, every cluster). Before this benchmark measured the first kind only (then 10 %, keys 'read/g<i mod 10>/')`,
    `search plans: a prefix holding ≤ ${fmtCount(EXACT_PREFIX_MAX)} beliefs is ranked exactly (index-only scan of beliefs_prefix_embedding by halfvec distance, best ${RERANK_FACTOR * K} re-ranked by the full vector), so ef_search does not apply to those rows; 'hnsw' = the HNSW index with iterative scan`,
    `index: ${indexdef} — dropped for the bulk load and rebuilt before measuring; all beliefs ACTIVE in one fleet`,
    'latency = the whole read transaction from the client (BEGIN, set_config, read point, the query, COMMIT) as search() runs it, without GraphQL and without embedding',
    "exact = the filter's rows ranked by full-precision distance in the same kind of transaction with enable_indexscan off (a scan and sort, or a bitmap scan on the prefix)",
    `machine heavily loaded by other work: load average at the end ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} on ${os.cpus().length} CPUs`,
  );
  if (opts.engine === 'pglite' && n < 100_000)
    caveats.push(
      `PGlite at ${fmtCount(n)} beliefs (100k is the PostgreSQL size; the embedded engine builds and scans far slower)`,
    );
  return report(measured, n, caveats, phases, versions, opts.engine);
}

function report(
  ms: Measured[],
  n: number,
  caveats: string[],
  phases: Record<string, number>,
  versions: BenchResult['engineVersions'],
  engine: string,
): BenchResult {
  const approx = ms.filter((m) => m.ef !== 'exact');
  const at = (ef: number) => approx.filter((m) => m.ef === ef);
  const meets = (ef: number) => at(ef).every((m) => m.recall >= 0.95 && m.p50 <= 10);
  const chosen = EFS.find(meets) ?? null;
  const def = at(EF_SEARCH).length ? EF_SEARCH : EFS[1]!;
  const worstRecall = at(def).reduce((w, m) => (m.recall < w.recall ? m : w));
  const worstP50 = at(def).reduce((w, m) => (m.p50 > w.p50 ? m : w));
  const targets: Target[] = [
    {
      label: `recall@10 at ef_search ${def} (current EF_SEARCH), worst filter (${worstRecall.filter})`,
      figure: worstRecall.recall.toFixed(3),
      limit: '0.95',
      ratio: (worstRecall.recall / 0.95).toFixed(3),
      target: '≥ 0.95',
      met: worstRecall.recall >= 0.95,
    },
    {
      label: `p50 latency at ef_search ${def}, worst filter (${worstP50.filter})`,
      figure: fmtMs(worstP50.p50),
      limit: '10 ms',
      ratio: `${(worstP50.p50 / 10).toFixed(2)}×`,
      target: '≤ 10 ms',
      met: worstP50.p50 <= 10,
    },
  ];
  const best = [...EFS].reverse().find((ef) => at(ef).every((m) => m.p50 <= 10));
  const recommendation =
    chosen !== null
      ? `choose ef_search ${chosen}: the smallest measured value with recall@10 ≥ 0.95 and p50 ≤ 10 ms with and without the prefix filter${chosen === EF_SEARCH ? ' (the current default)' : ` (EF_SEARCH is ${EF_SEARCH})`}`
      : `no measured ef_search meets recall@10 ≥ 0.95 at p50 ≤ 10 ms in both filter variants${best ? `; the largest within 10 ms p50 is ${best}` : ''} (EF_SEARCH is ${EF_SEARCH})`;
  const rows: Cell[][] = ms.map((m) => [
    m.filter,
    m.ef === 'exact' ? 'exact' : m.ef,
    m.recall.toFixed(3),
    m.minRecall.toFixed(1),
    fmtMs(m.p50),
    fmtMs(m.p99),
    fmtMs(m.mean),
    m.plan,
    m.loadavg.map((x) => x.toFixed(1)).join(' '),
  ]);
  const charts = [
    {
      name: `read-${engine}-recall`,
      svg: lineChart({
        title: `read on ${engine}, ${fmtCount(n)} beliefs: recall@10 vs p50 (ef_search ${EFS.join('/')})`,
        xLabel: 'p50 latency (ms)',
        yLabel: 'recall@10',
        series: Object.keys(FILTERS).map((f) => ({
          name: `filter ${f}`,
          points: approx.filter((m) => m.filter === f).map((m) => [m.p50, m.recall] as [number, number]),
        })),
      }),
    },
  ];
  return {
    targets,
    table: {
      columns: ['filter', 'ef_search', 'recall@10', 'min', 'p50', 'p99', 'mean', 'plan', 'loadavg 1/5/15'],
      rows,
      notes: [
        `${fmtCount(n)} beliefs, ${QUERIES} queries, k = ${K}; recall@10 = mean over queries of |approx ∩ exact| / 10; min = worst query`,
        recommendation,
      ],
    },
    data: { n, measured: ms, recommendation, chosen, defaultEf: EF_SEARCH },
    charts,
    phases,
    caveats,
    engineVersions: versions,
  };
}

export const bench: Bench = {
  name: 'read',
  description:
    'recall@10 and latency of the search path (HNSW with iterative scan; exact inside a small claim-key prefix) vs exact search over 100k clustered 512-d beliefs, at ef_search 40/100/200, without a filter and with 9 % (20 clusters), 10 % and 1 % (all clusters) claim-prefix filters',
  run,
};
