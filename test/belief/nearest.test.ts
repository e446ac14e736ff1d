import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { engines, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { createAgentDirect } from '../../src/agent/agent.service';
import { searchInTx } from '../../src/belief/nearest.repository';
import { readTx } from '../../src/store/tx';
import { rng } from '../../experiments/bench/lib/prng';
import { beliefScans } from '../../experiments/bench/lib/scans';

/**
 * READ with a claim-key prefix whose beliefs lie away from the query: the hits must be the true
 * nearest beliefs inside the prefix, not merely k beliefs that pass the filter (which is what a
 * filtered HNSW scan returns first).
 */
const DIM = 512;
/**
 * Large clusters outside the prefix (far bigger than ef_search, so a query's first candidates are
 * all outside it)… The sizes are the smallest tried at which the previous query (HNSW, relaxed
 * iterative scan, LIMIT k, re-sorted) returned wrong hits on PGlite.
 */
const OUT_CLUSTERS = 4;
const OUT_SIZE = 1000;
/** …and the prefix's beliefs (1000, 20 %) spread over many small clusters, all far from every query. */
const IN_CLUSTERS = 40;
const IN_SIZE = 25;

const normalFrom = (seed: number) => rng(seed).normal;
const unit = (v: number[]) => {
  const l = Math.hypot(...v);
  return v.map((x) => x / l);
};
const around = (c: number[], sigma: number, normal: () => number) => unit(c.map((x) => x + sigma * normal()));
const cosineDistance = (a: number[], b: number[]) => 1 - a.reduce((s, x, i) => s + x * b[i]!, 0);
const literal = (v: number[]) => `[${v.map((x) => x.toFixed(6)).join(',')}]`;

describe.each(engines())('nearest beliefs inside a claim-key prefix on %s', (engine) => {
  let t: TestDb;
  const points: Array<{ key: string; v: number[] }> = [];
  storeSuite(engine, {}, async (s) => {
    t = s.t;
    const agent = await createAgentDirect(t.store, { fleet: 'near', name: 'reader', scopes: ['beliefs:read'] });
    const normal = normalFrom(42);
    const centre = () => unit(Array.from({ length: DIM }, normal));
    for (let c = 0; c < OUT_CLUSTERS; c++) {
      const m = centre();
      for (let j = 0; j < OUT_SIZE; j++) points.push({ key: `out/${c}/${j}`, v: around(m, 0.035, normal) });
    }
    for (let c = 0; c < IN_CLUSTERS; c++) {
      const m = centre();
      for (let j = 0; j < IN_SIZE; j++) points.push({ key: `in/${c}/${j}`, v: around(m, 0.035, normal) });
    }
    const keys = points.map((p) => p.key);
    // Bulk load without the HNSW index, then build it, as a store that grew would have it.
    const hnsw = await sql<{
      indexname: string;
      indexdef: string;
    }>`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'beliefs' AND indexdef ILIKE '%using hnsw%'`.execute(
      t.store.db,
    );
    for (const i of hnsw.rows) await sql.raw(`DROP INDEX ${i.indexname}`).execute(t.store.db);
    await sql`INSERT INTO claims (fleet_id, key) SELECT 'near', k FROM unnest(${keys}::text[]) AS k`.execute(
      t.store.db,
    );
    await sql`INSERT INTO beliefs (fleet_id, claim_key, statement, author_id, grounded, embedding)
      SELECT 'near', k, 'belief ' || k, ${agent.agent.id}, true, v::vector(512)
        FROM unnest(${keys}::text[], ${points.map((p) => literal(p.v))}::text[]) AS u(k, v)`.execute(t.store.db);
    for (const i of hnsw.rows) await sql.raw(i.indexdef).execute(t.store.db);
    await sql`ANALYZE beliefs`.execute(t.store.db);
  });

  /** The 10 claim keys under `prefix` nearest to `q`, ranked in JavaScript from the loaded points. */
  const exactNearest = (q: Parameters<typeof cosineDistance>[0], prefix: string) =>
    points
      .filter((p) => p.key.startsWith(prefix))
      .map((p) => ({ key: p.key, d: cosineDistance(q, p.v) }))
      .sort((a, b) => a.d - b.d)
      .slice(0, 10)
      .map((p) => p.key);

  it('returns the exact 10 nearest prefix beliefs, nearest first, for queries from clusters outside the prefix', async () => {
    const normal = normalFrom(7);
    let queries = 0;
    for (let j = 0; j < 12; j++) {
      const q = around(points[(j % OUT_CLUSTERS) * OUT_SIZE + j]!.v, 0.02, normal);
      const want = exactNearest(q, 'in/');
      const got = await readTx(t.store, 'near', (tx) =>
        searchInTx(tx, 'near', { vector: literal(q), k: 10, includeRetracted: false, prefix: 'in/' }),
      );
      expect(got.plan).toBe('exact prefix');
      expect(got.hits.map((h) => h.belief.claim_key)).toEqual(want);
      queries++;
    }
    expect(queries).toBe(12);
  });

  it('a prefix that ends inside a key segment (in/1 = in/1/…, in/10/… to in/19/…) gets the exact nearest of exactly those keys', async () => {
    const q = around(points[OUT_SIZE]!.v, 0.02, normalFrom(9));
    const want = exactNearest(q, 'in/1');
    const got = await readTx(t.store, 'near', (tx) =>
      searchInTx(tx, 'near', { vector: literal(q), k: 10, includeRetracted: false, prefix: 'in/1' }),
    );
    expect(got.hits.map((h) => h.belief.claim_key)).toEqual(want);
  });

  // Scan counters are per node: on Citus the search runs on the fleet's worker, whose counters this connection does not read.
  it.skipIf(engine === 'citus')(
    'the exact path reads the prefix from beliefs_prefix_embedding alone, and index only once vacuumed',
    async () => {
      const q = around(points[OUT_SIZE]!.v, 0.02, normalFrom(10));
      const scansOfSearch = () =>
        readTx(t.store, 'near', async (tx) => {
          let plan = '';
          const s = await beliefScans(tx, async () => {
            plan = (await searchInTx(tx, 'near', { vector: literal(q), k: 10, includeRetracted: false, prefix: 'in/' }))
              .plan;
          });
          expect(plan).toBe('exact prefix');
          return new Map(s.map((x) => [x.name, x]));
        });
      // Freshly loaded (visibility map unset, where the planner on its own prefers beliefs_claim and
      // TOAST): every prefix row (1000) through the covering index, whose heap visits are visibility
      // checks only; nothing else but the primary key (the re-rank of the 40 candidates, the hits).
      const fresh = await scansOfSearch();
      expect(fresh.get('beliefs_prefix_embedding')).toMatchObject({ scans: 1, read: IN_CLUSTERS * IN_SIZE });
      expect([...fresh.keys()].sort()).toEqual(['beliefs_pkey', 'beliefs_prefix_embedding']);
      // Vacuumed: the same scan, now index only.
      await sql`VACUUM beliefs`.execute(t.store.db);
      const vacuumed = await scansOfSearch();
      expect(vacuumed.get('beliefs_prefix_embedding')).toMatchObject({
        scans: 1,
        read: IN_CLUSTERS * IN_SIZE,
        heap: 0,
      });
      expect([...vacuumed.keys()].sort()).toEqual(['beliefs_pkey', 'beliefs_prefix_embedding']);
    },
  );

  it("the exact path's code-point range holds exactly the keys that start with the prefix, beyond ASCII too", async () => {
    const agent = await createAgentDirect(t.store, { fleet: 'near-u', name: 'reader', scopes: ['beliefs:read'] });
    // Neighbours of each prefix in code-point order on both sides, including the last code point
    // below the surrogates (its successor is U+E000, not a surrogate), one above them, and an
    // astral letter (a surrogate pair in JS).
    const keys = [
      'é',
      'é/1',
      'éa',
      'éé',
      'ê',
      'è/9',
      'e',
      'f',
      '\ud7fb/1',
      '\ud7fb',
      '\ud7fc',
      '\ud7ff',
      '\ud7ff/1',
      '\ue000',
      '\ue000/1',
      '\uf900/2',
      '\ud835\udc9c/1',
      '\ud835\udc9c\ud835\udc9c',
      '\ud835\udc9d',
      'z',
    ];
    const normal = normalFrom(12);
    const vec = () => literal(unit(Array.from({ length: DIM }, normal)));
    await sql`INSERT INTO claims (fleet_id, key) SELECT 'near-u', k FROM unnest(${keys}::text[]) AS k`.execute(
      t.store.db,
    );
    await sql`INSERT INTO beliefs (fleet_id, claim_key, statement, author_id, grounded, embedding)
      SELECT 'near-u', k, 'belief ' || k, ${agent.agent.id}, true, v::vector(512)
        FROM unnest(${keys}::text[], ${keys.map(vec)}::text[]) AS u(k, v)`.execute(t.store.db);
    for (const prefix of ['é', 'éa', '\ud7fb', '\ud7ff', '\ud835\udc9c', 'e', '\uf900']) {
      const got = await readTx(t.store, 'near-u', (tx) =>
        searchInTx(tx, 'near-u', { vector: vec(), k: 20, includeRetracted: false, prefix }),
      );
      expect(got.plan).toBe('exact prefix');
      expect(got.hits.map((h) => h.belief.claim_key).sort(), prefix).toEqual(
        keys.filter((k) => k.startsWith(prefix)).sort(),
      );
    }
  });

  it("without a prefix the index still finds the query's own cluster, through the HNSW index at every ef_search", async () => {
    const q = around(points[2 * OUT_SIZE]!.v, 0.02, normalFrom(8));
    // At ef_search 1000 over these 5000 rows pgvector's cost estimate leads the planner, left to
    // itself, to rank every row by a sequential scan and a sort (so does PGlite at 20k rows, ef 100).
    for (const ef of [undefined, 1000]) {
      let got!: Awaited<ReturnType<typeof searchInTx>>;
      const scans = await readTx(t.store, 'near', (tx) =>
        beliefScans(tx, async () => {
          got = await searchInTx(tx, 'near', { vector: literal(q), k: 10, includeRetracted: false, prefix: null, ef });
        }),
      );
      expect(got.plan).toBe('hnsw');
      expect(got.hits).toHaveLength(10);
      expect(got.hits.every((h) => h.belief.claim_key.startsWith('out/2/'))).toBe(true);
      if (engine !== 'citus')
        expect(scans.map((x) => x.name).sort(), `ef_search ${ef ?? 'default'}`).toEqual([
          'beliefs_embedding',
          'beliefs_pkey',
        ]);
    }
  });

  it("a search leaves the transaction's planner and HNSW settings as they were", async () => {
    const q = literal(around(points[0]!.v, 0.02, normalFrom(11)));
    const settings = (tx: Parameters<Parameters<typeof readTx>[2]>[0]) =>
      sql<{
        name: string;
        setting: string;
      }>`SELECT name, setting FROM pg_settings WHERE name IN ('enable_seqscan', 'enable_bitmapscan', 'enable_sort', 'random_page_cost', 'jit', 'hnsw.ef_search', 'hnsw.iterative_scan') ORDER BY name`.execute(
        tx,
      );
    await readTx(t.store, 'near', async (tx) => {
      const before = (await settings(tx)).rows;
      for (const prefix of ['in/', 'out/', null])
        await searchInTx(tx, 'near', { vector: q, k: 10, includeRetracted: false, prefix, ef: 300 });
      expect((await settings(tx)).rows).toEqual(before);
    });
  });
});
