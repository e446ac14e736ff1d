import fs from 'node:fs';
import os from 'node:os';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Core } from '../../src/core';
import { LocalEmbedder } from '../../src/embedding/local';
import { checkInvariants } from '../../src/invariants/check';
import { retractBelief } from '../../src/retraction/retraction.service';
import { reinstateRetraction } from '../../src/reinstatement/reinstatement.service';
import type { Store } from '../../src/store/engine';
import type { DB } from '../../src/store/schema';
import { inTx, readTx, type Tx } from '../../src/store/tx';
import type { Bench, BenchOptions, BenchResult, Cell, Target } from './lib/bench';
import { type Measure, type Measurement, inChild } from './lib/child';
import { RESULTS_DIR, fmtCount, fmtMB, fmtMs, fmtRatio, phaseTimer } from './lib/report';
import { type BenchDb, type Location, type OwnerSql, freshDb, openAt } from './lib/stores';
import { compact, lineChart } from './lib/svg';
import {
  FLEET,
  type Graph,
  Loader,
  SHAPES,
  type Shape,
  expectedLevels,
  expectedRetracted,
  vectorPool,
} from './lib/cascade-graphs';

/**
 * The cascade benchmark: how long `retractBelief` (the real service, through Core with the local
 * embedder) takes to retract a blast radius of 1k, 10k and 100k beliefs, against
 *  - the bare-SQL limit, measured in the same run under the same transaction settings
 *    (SERIALIZABLE, SET LOCAL ROLE retract_app, the fleet setting): ONE statement, a recursive
 *    closure query feeding ONE UPDATE of exactly the rows that fall, on an identically generated
 *    copy of the graph; it writes no receipt totals, no events and no depths (depth 1 for all);
 *  - at 1k and 10k, the per-belief traversal (the obvious implementation): one query per belief for
 *    its dependents and one UPDATE per dependent, in one transaction, on another copy.
 * Both baselines roll their transaction back after the timed work (retractBelief's time includes
 * its commit), so the limits are, if anything, too strict.
 *
 * Shapes (lib/cascade-graphs.ts): `tree` (fan-out 4), `dag` (diamonds, a tenth survive), `chain`
 * (depth = size), `comb` (a chain with a side branch at every node) and `star` (one premise, every
 * other belief on it). Stores: the graphs alone, and the tree and dag (--unrelated-shapes) again
 * beside U unrelated beliefs of the same fleet (default 1M on PostgreSQL, 200k on PGlite), with
 * claims, justifications and premises of their own.
 * Targets: every shape at 10k and 100k within 2× of its limit (on PGlite 3× for chain, comb and
 * star, and a 10k chain under 2 s); 100k with vs without the unrelated beliefs within ±20 %; the
 * per-belief traversal ≥ 20× slower at 10k; peak RSS < 300 MB at the top size.
 * Both stores are loaded first (bulk SQL as the owner, foreign-key triggers off and checked after,
 * HNSW dropped and rebuilt), then measured alternately scenario by scenario.
 *
 * Each scenario runs in one fresh child process: retractBelief first (its peak RSS is the process's
 * peak so far), then the limit, repeated on fresh copies (median of 3 at ≤ 10k, of 2 above), then
 * the per-belief traversal. Every run checks that all of them retracted the same set (by offset from
 * the root), equal to the generator's expectation, and that the store holds every invariant after.
 *
 * Flags: --unrelated N (0: no second store) · --shapes tree,dag,chain,comb,star · --unrelated-shapes tree,dag · --repeat N · --repeat-large N ·
 * --per-belief-max N (10k) · --per-belief-everywhere · --no-reinstate (skip reinstating each scenario's retraction) · --hnsw on|off (rebuild the HNSW index in the
 * graphs-only store; default on for PostgreSQL, off for PGlite, whose single-threaded build takes
 * ~1.5 ms a belief) · --hnsw-everywhere (in the unrelated store too: +3–4 min on PostgreSQL here;
 * retractions never touch it, see db/migrations/0003) ·
 * --vectors pool|constant · --vector-pool N · --explain (PostgreSQL: auto_explain plans of one extra
 * cascade at the top size into results/bench) · --skip-invariants · --keep (keep the databases).
 */
const SIZES = [1_000, 10_000, 100_000];
/** Shapes whose depth grows with their size (or whose one level is the whole radius): on PGlite within 3× of its limit. */
const DEEP: readonly Shape[] = ['chain', 'comb', 'star'];
const SELF = fileURLToPath(import.meta.url);

// ------------------------------------------------------------------ the measured work (child process)

interface Task {
  loc: Location;
  agentId: string;
  shape: Shape;
  n: number;
  /** Run in this order, in one process (retractBelief first, so the process's peak RSS so far is its own). */
  runs: Array<{ kind: RunKind; root: number }>;
  /** PostgreSQL only: log every statement's plan (auto_explain, ANALYZE, BUFFERS) into this file. */
  explainFile?: string;
}

/** reinstate / bareReinstate: taking back the service copy's retraction, and the bare-SQL limit of that, after it. */
type RunKind = 'service' | 'bare' | 'perBelief' | 'reinstate' | 'bareReinstate';

interface Fingerprint {
  count: number;
  md5: string;
  maxDepth: number | null;
}

interface TaskOutput {
  fingerprint: Fingerprint;
  retractionId: string;
  /** service: receipt row count, events' id count, remaining ACTIVE beliefs of the graph. */
  receipt?: { beliefsRetracted: number; eventIds: number; levels: number; stillActive: number };
  statements?: number;
  retries: number;
  /** Time spent inside the measured span on the check itself (fingerprinting before the rollback), subtracted. */
  checkMs: number;
}

class Rollback extends Error {
  constructor(readonly value: TaskOutput) {
    super('rollback');
  }
}

async function fingerprint(tx: Tx, root: number, n: number): Promise<Fingerprint> {
  const r = await sql<{ count: number; md5: string; max_depth: number | null }>`
    SELECT count(*)::int AS count, md5(coalesce(string_agg((id - ${root}::bigint)::text, ',' ORDER BY id), '')) AS md5, max(retraction_depth) AS max_depth
      FROM beliefs WHERE id BETWEEN ${root}::bigint AND ${root + n - 1}::bigint AND status = 'RETRACTED'`.execute(tx);
  const f = r.rows[0]!;
  return { count: f.count, md5: f.md5, maxDepth: f.max_depth };
}

async function newRetraction(tx: Tx, root: number, agentId: string, reason: string): Promise<string> {
  const r = await sql<{ id: string }>`
    INSERT INTO retractions (fleet_id, root_id, reason, actor_id) VALUES (${FLEET}, ${root}, ${reason}, ${agentId}) RETURNING id::text AS id`.execute(
    tx,
  );
  return r.rows[0]!.id;
}

/** A store whose one connection sends every statement's plan back as a notice (auto_explain). */
async function explainingStore(url: string, notices: string[]): Promise<Store> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const c = await pool.connect();
  c.on('notice', (n) => notices.push(n.message ?? ''));
  await c.query(`LOAD 'auto_explain'`);
  for (const s of [
    'log_min_duration = 0',
    'log_analyze = on',
    'log_buffers = on',
    'log_nested_statements = on',
    'log_timing = on',
    "log_level = 'notice'",
  ]) {
    await c.query(`SET auto_explain.${s}`);
  }
  await c.query(`SET client_min_messages = notice`);
  c.release();
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    engine: 'postgres',
    db,
    commits: new EventEmitter(),
    description: 'postgres (auto_explain)',
    listen: async () => async () => {},
    notifyCommitted() {},
    tx: {
      stats: { retries: 0, exhausted: 0, retriesByReason: {}, turns: { committed: 0, givenUp: 0 } },
      faults: { serializationFailures: 0, sharedMemoryFailures: 0 },
    },
    poolUse: () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: pool.options.max ?? 10,
    }),
    close: () => db.destroy(),
  };
}

/** Child-process entry (see lib/child.ts): runs the scenario's calls, each measured, and returns what each retracted. */
export async function work(t: Task, measure: Measure): Promise<TaskOutput[]> {
  const notices: string[] = [];
  const store =
    t.explainFile && t.loc.engine === 'postgres'
      ? await explainingStore(t.loc.databaseUrl, notices)
      : await openAt(t.loc, 2);
  try {
    const outs: TaskOutput[] = [];
    for (const run of t.runs) {
      // Warm the catalog and the plan caches of this connection, as a long-running server would have them.
      await readTx(store, FLEET, (tx) => sql`SELECT count(*) FROM beliefs WHERE id = ${run.root}`.execute(tx));
      notices.length = 0;
      outs.push(await workOne(store, t, run.kind, run.root, measure));
      if (t.explainFile) fs.writeFileSync(t.explainFile, notices.join('\n\n'));
    }
    return outs;
  } finally {
    await store.close();
  }
}

async function workOne(
  store: Store,
  t: Task,
  kind: Task['runs'][number]['kind'],
  root: number,
  measure: Measure,
): Promise<TaskOutput> {
  const retriesBefore = store.tx.stats.retries;
  if (kind === 'reinstate' || kind === 'bareReinstate') return workReinstate(store, t, kind, root, measure);
  if (kind === 'service') {
    const core: Core = { store, embedder: new LocalEmbedder() };
    const actor = { fleet: FLEET, agentId: t.agentId };
    const { retractionId } = await measure('retractBelief', () =>
      retractBelief(core, actor, { beliefId: String(root), reason: 'benchmark: the root turned out false' }),
    );
    return readTx(store, FLEET, async (tx) => {
      const r = await sql<{ beliefs_retracted: number; event_ids: number; levels: number; still_active: number }>`
        SELECT r.beliefs_retracted,
               (SELECT coalesce(sum(cardinality(ids)), 0)::int FROM events WHERE retraction_id = r.id AND type = 'BeliefRetracted') AS event_ids,
               (SELECT count(DISTINCT retraction_depth)::int FROM beliefs WHERE retraction_id = r.id) AS levels,
               (SELECT count(*)::int FROM beliefs WHERE id BETWEEN ${root}::bigint AND ${root + t.n - 1}::bigint AND status = 'ACTIVE') AS still_active
          FROM retractions r WHERE r.id = ${retractionId}`.execute(tx);
      const x = r.rows[0]!;
      return {
        fingerprint: await fingerprint(tx, root, t.n),
        retractionId,
        receipt: {
          beliefsRetracted: x.beliefs_retracted,
          eventIds: x.event_ids,
          levels: x.levels,
          stillActive: x.still_active,
        },
        retries: store.tx.stats.retries - retriesBefore,
        checkMs: 0,
      };
    });
  }
  return measure(kind === 'bare' ? 'bare SQL limit' : 'per-belief traversal', async () => {
    try {
      await inTx(store, { fleet: FLEET }, async (tx) => {
        const rid = await newRetraction(tx, root, t.agentId, kind);
        const statements = kind === 'bare' ? await bareLimit(tx, t.shape, root, rid) : await perBelief(tx, root, rid);
        const c0 = performance.now();
        const fp = await fingerprint(tx, root, t.n);
        throw new Rollback({
          fingerprint: fp,
          retractionId: rid,
          statements,
          retries: store.tx.stats.retries - retriesBefore,
          checkMs: performance.now() - c0,
        });
      });
    } catch (e) {
      if (e instanceof Rollback) return e.value;
      throw e;
    }
    throw new Error('baseline transaction committed; it must roll back');
  });
}

/**
 * The bare-SQL limit: one statement, a recursive walk from the root through justification premises
 * feeding one UPDATE. The tree needs nothing more. In the DAG the walk also yields the justifications
 * it reached; a belief holding a justification the walk did not reach (no premise in the closure)
 * stands — for this generator exactly the JTMS survivors, which the run checks against the service.
 */
async function bareLimit(tx: Tx, shape: Shape, root: number, rid: string): Promise<number> {
  const falls =
    shape === 'dag'
      ? sql`SELECT DISTINCT w.id FROM walk w
           WHERE NOT EXISTS (SELECT 1 FROM justifications j WHERE j.belief_id = w.id
                               AND j.id NOT IN (SELECT r.jid FROM walk r WHERE r.jid IS NOT NULL))`
      : sql`SELECT w.id FROM walk w`;
  await sql`
    WITH RECURSIVE walk(id, jid) AS (
      SELECT ${root}::bigint, NULL::bigint
      UNION
      SELECT j.belief_id, ${shape === 'dag' ? sql`j.id` : sql`NULL::bigint`} FROM walk w
        JOIN justification_premises p ON p.premise_id = w.id
        JOIN justifications j ON j.id = p.justification_id
    ), falls AS (${falls})
    UPDATE beliefs b SET status = 'RETRACTED', retraction_id = ${rid}, retraction_depth = CASE WHEN b.id = ${root}::bigint THEN 0 ELSE 1 END, retracted_at = now()
      FROM falls c
     WHERE b.id = c.id AND b.status = 'ACTIVE'`.execute(tx);
  return 1;
}

/**
 * Reinstating the service copy's retraction (reinstateRetraction, committed), or — on the same copy
 * retracted again, unmeasured — its bare-SQL limit: one statement, the retraction limit's recursive
 * walk from the root through justification premises, feeding one UPDATE that brings back the walked
 * beliefs of that retraction (for these generators every belief that fell is justified again once
 * the root returns). The walk does not read beliefs: a status test inside the recursive term is
 * planned once for a one-row working table, and on a chain that plan scanned the beliefs table
 * once per level (10k levels took 575 s). It writes no receipt, events, money lines or
 * contradictions, and rolls back.
 */
async function workReinstate(
  store: Store,
  t: Task,
  kind: 'reinstate' | 'bareReinstate',
  root: number,
  measure: Measure,
): Promise<TaskOutput> {
  const retriesBefore = store.tx.stats.retries;
  const core: Core = { store, embedder: new LocalEmbedder() };
  const actor = { fleet: FLEET, agentId: t.agentId };
  const live = async () =>
    (
      await readTx(store, FLEET, (tx) =>
        sql<{ id: string }>`
    SELECT id::text AS id FROM retractions WHERE fleet_id = ${FLEET} AND root_id = ${root} AND reinstated_at IS NULL`.execute(
          tx,
        ),
      )
    ).rows[0]?.id;
  if (kind === 'reinstate') {
    const rid = await live();
    if (!rid) throw new Error(`no retraction of ${root} to reinstate`);
    const r = await measure('reinstateRetraction', () =>
      reinstateRetraction(core, actor, { retractionId: rid, reason: 'benchmark: the root was true after all' }),
    );
    if (r.kind !== 'reinstated') throw new Error(`reinstatement ${r.reinstatementId} was ${r.kind}`);
    return readTx(store, FLEET, async (tx) => ({
      fingerprint: await fingerprint(tx, root, t.n),
      retractionId: rid,
      statements: 7,
      retries: store.tx.stats.retries - retriesBefore,
      checkMs: 0,
    }));
  }
  const { retractionId: rid } = await retractBelief(core, actor, {
    beliefId: String(root),
    reason: 'benchmark: retracted again for the bare limit',
  });
  return measure('bare SQL reinstatement limit', async () => {
    try {
      await inTx(store, { fleet: FLEET }, async (tx) => {
        await sql`
          WITH RECURSIVE walk(id) AS (
            SELECT ${root}::bigint
            UNION
            SELECT j.belief_id FROM walk w
              JOIN justification_premises p ON p.premise_id = w.id
              JOIN justifications j ON j.id = p.justification_id
          )
          UPDATE beliefs b SET status = 'ACTIVE', retraction_id = NULL, retraction_depth = NULL, retracted_at = NULL
            FROM walk w WHERE b.id = w.id AND b.retraction_id = ${rid}`.execute(tx);
        const c0 = performance.now();
        const fp = await fingerprint(tx, root, t.n);
        throw new Rollback({
          fingerprint: fp,
          retractionId: rid,
          statements: 1,
          retries: store.tx.stats.retries - retriesBefore,
          checkMs: performance.now() - c0,
        });
      });
    } catch (e) {
      if (e instanceof Rollback) return e.value;
      throw e;
    }
    throw new Error('baseline transaction committed; it must roll back');
  });
}

/** The obvious implementation: breadth first, one query per fallen belief for its dependents, one UPDATE per dependent. */
async function perBelief(tx: Tx, root: number, rid: string): Promise<number> {
  let statements = 1;
  await sql`UPDATE beliefs SET status = 'RETRACTED', retraction_id = ${rid}, retraction_depth = 0, retracted_at = now() WHERE id = ${root}::bigint AND status = 'ACTIVE'`.execute(
    tx,
  );
  const queue: Array<[string, number]> = [[String(root), 0]];
  for (let k = 0; k < queue.length; k++) {
    const [id, depth] = queue[k]!;
    const deps = await sql<{ id: string }>`
      SELECT DISTINCT j.belief_id::text AS id FROM justification_premises p JOIN justifications j ON j.id = p.justification_id WHERE p.premise_id = ${id}::bigint`.execute(
      tx,
    );
    statements++;
    for (const d of deps.rows) {
      const fell = await sql<{ id: string }>`
        UPDATE beliefs b SET status = 'RETRACTED', retraction_id = ${rid}, retraction_depth = ${depth + 1}, retracted_at = now()
         WHERE b.id = ${d.id}::bigint AND b.status = 'ACTIVE' AND NOT b.grounded
           AND NOT EXISTS (SELECT 1 FROM justifications j WHERE j.belief_id = b.id
                 AND NOT EXISTS (SELECT 1 FROM justification_premises p JOIN beliefs pb ON pb.id = p.premise_id
                                  WHERE p.justification_id = j.id AND pb.status <> 'ACTIVE'))
        RETURNING b.id::text AS id`.execute(tx);
      statements++;
      if (fell.rows.length > 0) queue.push([d.id, depth + 1]);
    }
  }
  return statements;
}

// ------------------------------------------------------------------ the benchmark

interface Row {
  store: string;
  storeBeliefs: number;
  /** Whether the store had its HNSW index when measured. */
  hnsw: boolean;
  unrelated: number;
  shape: Shape;
  n: number;
  retracted: number;
  survivors: number;
  levels: number;
  serviceMs: number;
  bareMs: number;
  perBeliefMs: number | null;
  /** reinstateRetraction of the service copy's retraction, and its bare-SQL limit (null with --no-reinstate). */
  reinstateMs: number | null;
  bareReinstateMs: number | null;
  serviceRssPeakBytes: number;
  serviceMaxRssBytes: number;
  /** Resident set of that process just before retractBelief (after start-up and opening the store). */
  serviceRssBeforeBytes: number;
  /** Every repetition's time (the row shows the median). */
  serviceRuns: number[];
  bareRuns: number[];
  measurements: Record<string, Measurement>;
  /** 1-minute load average of the machine right after the scenario (other processes share it). */
  load1: number;
  statements: Record<string, number | undefined>;
}

function parseCount(v: string | true | undefined, dflt: number, flag: string): number {
  if (v === undefined) return dflt;
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(v) : null;
  if (!m) throw new Error(`--${flag} must be a count like 200000, 200k or 1M`);
  return Math.round(Number(m[1]) * (m[2]?.toLowerCase() === 'k' ? 1e3 : m[2]?.toLowerCase() === 'm' ? 1e6 : 1));
}

async function run(opts: BenchOptions): Promise<BenchResult> {
  const f = opts.flags;
  const sizes = opts.size ? [opts.size] : SIZES;
  if (sizes.some((s) => !Number.isInteger(s) || s < 10)) throw new Error('--size must be an integer ≥ 10');
  const unrelated = parseCount(f.unrelated, opts.engine === 'postgres' ? 1_000_000 : 200_000, 'unrelated');
  const perBeliefMax = parseCount(f['per-belief-max'], 10_000, 'per-belief-max');
  const shapes = typeof f.shapes === 'string' ? (f.shapes.split(',') as Shape[]) : [...SHAPES];
  if (shapes.some((s) => !SHAPES.includes(s))) throw new Error(`--shapes takes a comma list of ${SHAPES.join(', ')}`);
  // The unrelated store answers one question (does a large store slow a retraction?), for the shallow shapes.
  const unrelatedShapes =
    typeof f['unrelated-shapes'] === 'string' ? (f['unrelated-shapes'].split(',') as Shape[]) : ['tree', 'dag'];
  const shapesIn = (u: number) => shapes.filter((s) => u === 0 || unrelatedShapes.includes(s));
  const vectors = f.vectors === 'constant' ? 'constant' : 'pool';
  const poolSize = parseCount(f['vector-pool'], 1000, 'vector-pool');
  const explain = f.explain === true;
  const perBeliefEverywhere = f['per-belief-everywhere'] === true;
  const reinstate = f['no-reinstate'] !== true;
  // Small scenarios are cheap and noisy: service and limit run `repeat` times (fresh copies) and report the median.
  const repeat = parseCount(f.repeat, 3, 'repeat');
  const repeatLarge = parseCount(f['repeat-large'], 2, 'repeat-large');
  const repeatsFor = (n: number) => Math.max(1, n <= 10_000 ? repeat : repeatLarge);
  const hnswEverywhere = f['hnsw-everywhere'] === true;
  // PGlite builds HNSW single-threaded at ~1.5 ms a belief here (12 min for the graphs-only store):
  // off by default there (--hnsw builds it); the index's (non-)effect on a retraction is measured on PostgreSQL.
  const hnswInGraphsStore = opts.engine === 'postgres' ? f.hnsw !== 'off' : f.hnsw === true || f.hnsw === 'on';
  let hnswDefs: string[] = [];
  const vacuums: Array<{ store: string; hnsw: boolean; ms: number }> = [];
  const stores =
    f['no-unrelated'] === true || unrelated === 0 ? [0] : f['only-unrelated'] === true ? [unrelated] : [0, unrelated];
  const phases: Record<string, number> = {};
  const rows: Row[] = [];
  const caveats: string[] = [];
  let versions: BenchResult['engineVersions'] = null;
  const time = phaseTimer(phases);

  interface Prepared {
    u: number;
    label: string;
    db: BenchDb;
    loader: Loader;
    graphs: Graph[];
    buildHnsw: boolean;
  }
  const prepared: Prepared[] = [];

  /** Creates and loads one store: the graphs for every size and shape, plus u unrelated beliefs. */
  const prepare = async (u: number): Promise<Prepared> => {
    const label = u === 0 ? 'graphs only' : `+${fmtCount(u)} unrelated`;
    opts.log(`cascade: loading store "${label}" on ${opts.engine}`);
    const db: BenchDb = await time(`create database (${label})`, () =>
      freshDb(opts.engine, opts.serverUrl, u === 0 ? 'retract_bench_cascade' : 'retract_bench_cascade_u', {
        large: true,
      }),
    );
    prepared.push({ u, label, db, loader: null as unknown as Loader, graphs: [], buildHnsw: false });
    const P = prepared[prepared.length - 1]!;
    const q = await db.owner();
    let loader: Loader;
    const graphs = P.graphs;
    let hnsw: Array<{ indexname: string; indexdef: string }> = [];
    // The HNSW build costs ~0.15–0.2 ms per belief here (4–5 min over 1.4M); retractions never touch the
    // index (it is partial on ACTIVE, see db/migrations/0003), so by default only the graphs-only store has it.
    const buildHnsw = hnswEverywhere || (u === 0 && hnswInGraphsStore);
    P.buildHnsw = buildHnsw;
    try {
      versions ??= await engineVersionsOf(q);
      await q.query(`INSERT INTO fleets (id) VALUES ('${FLEET}')`);
      const [agent] = await q.query<{ id: string }>(
        `INSERT INTO agents (fleet_id, name, scopes) VALUES ('${FLEET}', 'bench', '{beliefs:retract}') RETURNING id::text AS id`,
      );
      loader = new Loader(q, agent!.id, await vectorPool(q, vectors, poolSize));
      P.loader = loader;
      hnsw = await q.query(
        `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'beliefs' AND indexdef ILIKE '%using hnsw%'`,
      );
      hnswDefs = hnsw.map((i) => i.indexdef);
      for (const i of hnsw) await q.query(`DROP INDEX ${i.indexname}`);
      // The generator is consistent by construction: skip the per-row foreign-key triggers while loading
      // (checked once afterwards), as a restore does. Only the loading session is affected.
      await q.query(`SET session_replication_role = replica`);
      await time(`load unrelated (${label})`, async () => {
        if (u > 0) await loader.unrelated(u, opts.log);
      });
      await time(`load graphs (${label})`, async () => {
        for (const n of sizes) {
          for (const shape of shapesIn(u)) {
            for (let rep = 0; rep < repeatsFor(n); rep++) {
              graphs.push(await loader.graph(shape, n, 'service', rep));
              graphs.push(await loader.graph(shape, n, 'bare', rep));
            }
            if (n <= perBeliefMax && (u === 0 || perBeliefEverywhere))
              graphs.push(await loader.graph(shape, n, 'perBelief'));
            if (explain && opts.engine === 'postgres' && n === Math.max(...sizes))
              graphs.push(await loader.graph(shape, n, 'explain'));
          }
          opts.log(`  graphs of ${fmtCount(n)} loaded (${fmtCount(loader.beliefs)} beliefs so far)`);
        }
      });
      await q.query(`SET session_replication_role = origin`);
      await time(`check references (${label})`, async () => {
        const [bad] = await q.query<{ n: number }>(`SELECT
            (SELECT count(*) FROM justification_premises p WHERE NOT EXISTS (SELECT 1 FROM beliefs b WHERE b.id = p.premise_id))
          + (SELECT count(*) FROM justification_premises p WHERE NOT EXISTS (SELECT 1 FROM justifications j WHERE j.id = p.justification_id))
          + (SELECT count(*) FROM justifications j WHERE NOT EXISTS (SELECT 1 FROM beliefs b WHERE b.id = j.belief_id))
          + (SELECT count(*) FROM beliefs b WHERE NOT EXISTS (SELECT 1 FROM claims c WHERE c.fleet_id = b.fleet_id AND c.key = b.claim_key)) AS n`);
        if (Number(bad!.n) !== 0) throw new Error(`the generator wrote ${bad!.n} dangling references`);
      });
      await q.query(`SELECT setval(pg_get_serial_sequence('beliefs', 'id'), (SELECT max(id) FROM beliefs))`);
      await q.query(
        `SELECT setval(pg_get_serial_sequence('justifications', 'id'), (SELECT max(id) FROM justifications))`,
      );
      await time(`build HNSW index (${label})`, async () => {
        await q.query(`SET maintenance_work_mem = '${opts.engine === 'postgres' ? '2GB' : '512MB'}'`);
        // The heap is small (vectors live in TOAST), so the planner would build serially: ask for two workers.
        await q.query(`SET max_parallel_maintenance_workers = 2`);
        if (!buildHnsw) {
          opts.log(
            `  HNSW index NOT rebuilt in this store (${u === 0 ? '--hnsw' : '--hnsw-everywhere'} builds it): ${hnsw.map((i) => i.indexname).join(', ')}`,
          );
          return;
        }
        await q.query(`ALTER TABLE beliefs SET (parallel_workers = 2)`);
        for (const i of hnsw) await q.query(i.indexdef);
        await q.query(`ALTER TABLE beliefs RESET (parallel_workers)`);
        opts.log(`  ${hnsw.map((i) => i.indexname).join(', ')} rebuilt over ${fmtCount(loader.beliefs)} beliefs`);
      });
      await time(`vacuum analyze + checkpoint (${label})`, async () => {
        await q.query(`VACUUM (ANALYZE) beliefs, claims, justifications, justification_premises, events`);
        // Each cascade leaves 1k–100k dead row versions whose (ACTIVE) HNSW entries vacuum must clean out:
        // an autovacuum of beliefs triggered by one scenario would run beside the next one. Measured
        // separately below instead.
        for (const t of ['beliefs', 'events', 'retractions'])
          await q.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
        await q.query(`CHECKPOINT`);
      });
    } finally {
      await q.close();
    }
    return P;
  };

  /** Measures one scenario of one store in a child process and checks what was retracted. */
  const measureOne = async (P: Prepared, n: number, shape: Shape): Promise<void> => {
    const { u, label, db, loader, graphs, buildHnsw } = P;
    const mine = graphs.filter((g) => g.n === n && g.shape === shape);
    const of = (copy: Graph['copy']) => mine.find((g) => g.copy === copy);
    const base = { loc: db.location, agentId: loader.agentId, shape, n };
    // retractBelief first (so the child's peak RSS so far is its own), then the limit; repeated; per-belief last.
    const order = [
      ...mine
        .filter((g) => g.copy === 'service' || g.copy === 'bare')
        .sort((a, b) => a.rep - b.rep || (a.copy === 'service' ? -1 : 1)),
      ...mine.filter((g) => g.copy === 'perBelief'),
    ];
    const runs: Task['runs'] = order.map((g) => ({ kind: g.copy as RunKind, root: g.root }));
    // Then the retraction of the first service copy taken back, and the bare limit of that (on the same copy, retracted again).
    const first = order.find((g) => g.copy === 'service');
    if (reinstate && first)
      runs.splice(
        runs.findIndex((x) => x.kind === 'perBelief') < 0 ? runs.length : runs.findIndex((x) => x.kind === 'perBelief'),
        0,
        { kind: 'reinstate', root: first.root },
        { kind: 'bareReinstate', root: first.root },
      );
    const r = await time(`measure (${label})`, () => inChild<Task, TaskOutput[]>(SELF, { ...base, runs }));
    const byKind: Record<string, Array<{ o: TaskOutput; m: Measurement }>> = {
      service: [],
      bare: [],
      perBelief: [],
      reinstate: [],
      bareReinstate: [],
    };
    runs.forEach((run, i) => {
      const o = r.output[i]!;
      const ms = r.measurements[i]!;
      byKind[run.kind]!.push({ o, m: { ...ms, ms: ms.ms - o.checkMs } });
    });
    const median = (xs: number[]) => {
      const v = [...xs].sort((a, b) => a - b);
      const h = Math.floor(v.length / 2);
      return v.length % 2 ? v[h]! : (v[h - 1]! + v[h]!) / 2;
    };
    const m: Record<string, Measurement> = {};
    const st: Record<string, number | undefined> = {};
    for (const k of ['service', 'bare', 'perBelief', 'reinstate', 'bareReinstate']) {
      const xs = byKind[k]!;
      if (!xs.length) continue;
      m[k] = { ...xs[0]!.m, ms: median(xs.map((x) => x.m.ms)) };
      st[k] = xs[0]!.o.statements;
    }
    const svc = byKind.service![0]!.o;
    const bare = byKind.bare![0]!.o;
    const pb = byKind.perBelief![0]?.o ?? null;
    const want = expectedRetracted(shape, n);
    const wrong: string[] = [];
    if (svc.fingerprint.count !== want)
      wrong.push(`retractBelief retracted ${svc.fingerprint.count}, the generator expects ${want}`);
    for (const x of [...byKind.service!, ...byKind.bare!]) {
      if (x.o.fingerprint.md5 !== svc.fingerprint.md5)
        wrong.push(
          `a repetition retracted a different set (${x.o.fingerprint.count}) than the first retractBelief (${svc.fingerprint.count})`,
        );
    }
    for (const x of byKind.service!.slice(1)) {
      if (x.o.receipt!.beliefsRetracted !== want || x.o.receipt!.eventIds !== want)
        wrong.push(`a repeated receipt counts ${x.o.receipt!.beliefsRetracted} beliefs, expected ${want}`);
    }
    if (bare.fingerprint.md5 !== svc.fingerprint.md5)
      wrong.push(
        `the bare-SQL limit retracted a different set (${bare.fingerprint.count}) than retractBelief (${svc.fingerprint.count})`,
      );
    if (pb && pb.fingerprint.md5 !== svc.fingerprint.md5)
      wrong.push(`the per-belief traversal retracted a different set (${pb.fingerprint.count}) than retractBelief`);
    if (pb && pb.fingerprint.maxDepth !== svc.fingerprint.maxDepth)
      wrong.push(
        `cascade depth ${svc.fingerprint.maxDepth} differs from the per-belief traversal's ${pb.fingerprint.maxDepth}`,
      );
    const rc = svc.receipt!;
    if (rc.beliefsRetracted !== want || rc.eventIds !== want)
      wrong.push(`receipt counts ${rc.beliefsRetracted} beliefs and its events ${rc.eventIds}, expected ${want}`);
    // Every level from 0 to the deepest has a belief; the generators fix the deepest except the dag's (its diamonds shorten some paths).
    const deepest = shape === 'dag' ? svc.fingerprint.maxDepth : expectedLevels(shape, n);
    if (rc.levels !== (deepest ?? 0) + 1 || svc.fingerprint.maxDepth !== deepest)
      wrong.push(`${rc.levels} levels, the deepest ${svc.fingerprint.maxDepth}, expected every level 0…${deepest}`);
    if (rc.stillActive !== n - want)
      wrong.push(`${rc.stillActive} beliefs of the graph still ACTIVE, expected ${n - want} survivors`);
    for (const k of ['reinstate', 'bareReinstate']) {
      const x = byKind[k]![0]?.o;
      if (x && x.fingerprint.count !== 0)
        wrong.push(`${k} left ${x.fingerprint.count} beliefs of the graph RETRACTED, expected every one back`);
    }
    if (wrong.length) throw new Error(`cascade ${shape} ${fmtCount(n)} (${label}): ${wrong.join('; ')}`);
    const ex = of('explain');
    if (ex) {
      fs.mkdirSync(RESULTS_DIR, { recursive: true });
      const file = path.join(
        RESULTS_DIR,
        `cascade-explain-${opts.engine}-${shape}-${fmtCount(n)}-${u === 0 ? 'graphs' : 'unrelated'}.txt`,
      );
      const x = await inChild<Task, TaskOutput[]>(SELF, {
        ...base,
        runs: [{ kind: 'service', root: ex.root }],
        explainFile: file,
      });
      if (x.output[0]!.fingerprint.md5 !== svc.fingerprint.md5)
        throw new Error('the explained cascade retracted a different set');
      opts.log(
        `  (explain) ${shape} ${fmtCount(n)} under auto_explain took ${fmtMs(x.measurements[0]!.ms)}; plans → ${file}`,
      );
    }
    rows.push({
      store: label,
      storeBeliefs: loader.beliefs,
      hnsw: buildHnsw,
      unrelated: u,
      shape,
      n,
      retracted: svc.fingerprint.count,
      survivors: n - svc.fingerprint.count,
      levels: rc.levels,
      serviceMs: m.service!.ms,
      bareMs: m.bare!.ms,
      perBeliefMs: m.perBelief?.ms ?? null,
      reinstateMs: m.reinstate?.ms ?? null,
      bareReinstateMs: m.bareReinstate?.ms ?? null,
      serviceRssPeakBytes: byKind.service![0]!.m.rssPeakSampledBytes,
      serviceMaxRssBytes: byKind.service![0]!.m.maxRssBytes,
      serviceRssBeforeBytes: byKind.service![0]!.m.rssBeforeBytes,
      serviceRuns: byKind.service!.map((x) => Math.round(x.m.ms)),
      bareRuns: byKind.bare!.map((x) => Math.round(x.m.ms)),
      measurements: m,
      load1: os.loadavg()[0]!,
      statements: st,
    });
    const last = rows[rows.length - 1]!;
    opts.log(
      `  [${label}] ${shape} ${fmtCount(n)}: retractBelief ${fmtMs(last.serviceMs)}, limit ${fmtMs(last.bareMs)}${last.perBeliefMs !== null ? `, per-belief ${fmtMs(last.perBeliefMs)}` : ''}${last.reinstateMs !== null ? `, reinstate ${fmtMs(last.reinstateMs)} (limit ${fmtMs(last.bareReinstateMs!)})` : ''}, peak RSS ${fmtMB(last.serviceMaxRssBytes)}`,
    );
  };

  /** After every scenario of a store: one timed VACUUM of beliefs, the invariant check, drop. */
  const finish = async (P: Prepared): Promise<void> => {
    const { label, db, buildHnsw } = P;
    await time(`vacuum after the cascades (${label})`, async () => {
      const q2 = await db.owner();
      try {
        const t0 = performance.now();
        await q2.query(`VACUUM beliefs`);
        vacuums.push({ store: label, hnsw: buildHnsw, ms: performance.now() - t0 });
        opts.log(
          `  VACUUM beliefs after the cascades (dead versions of every retracted belief${buildHnsw ? ', their HNSW entries included' : ''}): ${fmtMs(performance.now() - t0)}`,
        );
        for (const t of ['beliefs', 'events', 'retractions'])
          await q2.query(`ALTER TABLE ${t} RESET (autovacuum_enabled)`);
      } finally {
        await q2.close();
      }
    });
    if (f['skip-invariants'] !== true) {
      await time(`check invariants (${label})`, async () => {
        const store = await db.open(1);
        try {
          const v = await checkInvariants(store);
          if (v.length > 0)
            throw new Error(
              `invariants violated after the cascade runs (${label}):\n${JSON.stringify(v, null, 2).slice(0, 4000)}`,
            );
        } finally {
          await store.close();
        }
      });
    }
  };

  try {
    for (const u of stores) await prepare(u);
    // Stores alternate scenario by scenario, so a drift in the machine's load affects both alike.
    for (const n of sizes)
      for (const shape of shapes)
        for (const P of prepared) if (shapesIn(P.u).includes(shape)) await measureOne(P, n, shape);
    for (const P of prepared) await finish(P);
  } finally {
    for (const P of prepared) {
      if (f.keep === true) opts.log(`  kept ${JSON.stringify(P.db.location)}`);
      else await time(`drop database (${P.label})`, () => P.db.drop());
    }
  }

  const built = prepared.filter((P) => P.buildHnsw).map((P) => P.label);
  caveats.push(
    `HNSW index on beliefs as migrated: ${hnswDefs.join('; ') || 'none'} — rebuilt after loading in: ${built.join(', ') || 'no store'} (--hnsw, --hnsw-everywhere)`,
  );
  caveats.push(
    'autovacuum is off on beliefs, events and retractions while measuring; one VACUUM of beliefs after all cascades of a store is timed instead: ' +
      vacuums.map((v) => `${v.store}${v.hnsw ? ' (with HNSW)' : ''} ${fmtMs(v.ms)}`).join(', '),
  );
  return report(rows, sizes, stores, {
    unrelated,
    phases,
    caveats,
    versions,
    engine: opts.engine,
    vectors,
    poolSize,
    vacuums,
    repeat,
    repeatLarge,
  });
}

async function engineVersionsOf(q: OwnerSql): Promise<{ server: string; vector: string | null }> {
  const [r] = await q.query<{ server: string; vector: string | null }>(
    `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector`,
  );
  return r!;
}

function report(
  rows: Row[],
  sizes: number[],
  stores: number[],
  ctx: {
    unrelated: number;
    phases: Record<string, number>;
    caveats: string[];
    versions: BenchResult['engineVersions'];
    engine: string;
    vectors: string;
    poolSize: number;
    vacuums: Array<{ store: string; hnsw: boolean; ms: number }>;
    repeat: number;
    repeatLarge: number;
  },
): BenchResult {
  const top = Math.max(...sizes);
  const targets: Target[] = [];
  const atTop = rows.filter((r) => r.n === top);
  // Every shape at 10k and above must be within its factor of the bare limit (or at the top size, in a smaller run).
  const judged = rows.filter((r) => r.n >= Math.min(10_000, top));
  const factor = (r: Row) => (ctx.engine === 'pglite' && DEEP.includes(r.shape) ? 3 : 2);
  const worst = judged.reduce<Row | null>(
    (w, r) => (!w || r.serviceMs / r.bareMs / factor(r) > w.serviceMs / w.bareMs / factor(w) ? r : w),
    null,
  );
  if (worst) {
    const ratio = worst.serviceMs / worst.bareMs;
    const sizesJudged = [...new Set(judged.map((r) => r.n))]
      .sort((a, b) => a - b)
      .map(fmtCount)
      .join(', ');
    targets.push({
      label: `retractBelief at ${sizesJudged}, worst of ${judged.length} (${worst.shape} ${fmtCount(worst.n)}, ${worst.store})`,
      figure: fmtMs(worst.serviceMs),
      limit: fmtMs(worst.bareMs),
      ratio: fmtRatio(ratio),
      target: `≤ ${factor(worst)}×`,
      met: ratio <= factor(worst),
    });
  }
  // Reinstating the top size's blast radius: within 2× of its bare limit, worst shape.
  const back = atTop.filter((r) => r.reinstateMs !== null && r.bareReinstateMs !== null);
  const worstBack = back.reduce<Row | null>(
    (w, r) => (!w || r.reinstateMs! / r.bareReinstateMs! > w.reinstateMs! / w.bareReinstateMs! ? r : w),
    null,
  );
  if (worstBack) {
    const ratio = worstBack.reinstateMs! / worstBack.bareReinstateMs!;
    targets.push({
      label: `reinstateRetraction at ${fmtCount(top)}, worst of ${back.length} (${worstBack.shape}, ${worstBack.store})`,
      figure: fmtMs(worstBack.reinstateMs!),
      limit: fmtMs(worstBack.bareReinstateMs!),
      ratio: fmtRatio(ratio),
      target: '≤ 2×',
      met: ratio <= 2,
    });
  }
  // The embedded engine's own bar for a deep graph: a 10k chain must feel instant enough.
  const chain10k =
    ctx.engine === 'pglite' ? rows.find((r) => r.shape === 'chain' && r.n === 10_000 && r.unrelated === 0) : undefined;
  if (chain10k) {
    targets.push({
      label: 'retractBelief of a 10k chain on PGlite',
      figure: fmtMs(chain10k.serviceMs),
      limit: '2 s',
      ratio: fmtRatio(chain10k.serviceMs / 2000),
      target: '< 2 s',
      met: chain10k.serviceMs < 2000,
    });
  }
  if (stores.length === 2) {
    let w: { shape: Shape; a: Row; b: Row; d: number } | null = null;
    for (const shape of SHAPES) {
      const a = atTop.find((r) => r.shape === shape && r.unrelated === 0);
      const b = atTop.find((r) => r.shape === shape && r.unrelated > 0);
      if (!a || !b) continue;
      const d = b.serviceMs / a.serviceMs - 1;
      if (!w || Math.abs(d) > Math.abs(w.d)) w = { shape, a, b, d };
    }
    if (w) {
      targets.push({
        label: `${fmtCount(top)} ${w.shape} with vs without ${fmtCount(ctx.unrelated)} unrelated`,
        figure: fmtMs(w.b.serviceMs),
        limit: fmtMs(w.a.serviceMs),
        ratio: `${w.d >= 0 ? '+' : ''}${(w.d * 100).toFixed(1)} %`,
        target: '±20 %',
        met: Math.abs(w.d) <= 0.2,
      });
    }
  }
  const pbSize = sizes.includes(10_000)
    ? 10_000
    : Math.max(0, ...rows.filter((r) => r.perBeliefMs !== null).map((r) => r.n));
  const pbRows = rows.filter((r) => r.n === pbSize && r.perBeliefMs !== null);
  const slowest = pbRows.reduce<Row | null>(
    (w, r) => (!w || r.perBeliefMs! / r.serviceMs < w.perBeliefMs! / w.serviceMs ? r : w),
    null,
  );
  if (slowest) {
    const s = slowest.perBeliefMs! / slowest.serviceMs;
    targets.push({
      label: `per-belief traversal at ${fmtCount(pbSize)} vs retractBelief, worst (${slowest.shape}, ${slowest.store})`,
      figure: fmtMs(slowest.perBeliefMs!),
      limit: fmtMs(slowest.serviceMs),
      ratio: fmtRatio(s),
      target: '≥ 20×',
      met: s >= 20,
    });
  }
  const rssRow = atTop.reduce<Row | null>((w, r) => (!w || r.serviceMaxRssBytes > w.serviceMaxRssBytes ? r : w), null);
  if (rssRow) {
    targets.push({
      label: `peak RSS of the process retracting ${fmtCount(top)} (${rssRow.shape}, ${rssRow.store})`,
      figure: fmtMB(rssRow.serviceMaxRssBytes),
      limit: '300 MB',
      ratio: fmtRatio(rssRow.serviceMaxRssBytes / (300 * 2 ** 20)),
      target: '< 300 MB',
      met: rssRow.serviceMaxRssBytes < 300 * 2 ** 20,
    });
  }
  if (top < 100_000)
    ctx.caveats.push(
      `ran at ${fmtCount(top)} only: the stated targets are for 100k (limit and RSS) and 10k (per-belief)`,
    );
  ctx.caveats.push(
    `embeddings: ${ctx.vectors === 'pool' ? `${ctx.poolSize} distinct deterministic pseudo-random unit vectors, cycled` : 'one constant unit vector'}; HNSW index dropped for the bulk load and rebuilt before measuring`,
    'both baselines roll back after the timed work; retractBelief commits (its time includes the commit)',
    'the bare-SQL limit writes no receipt, events or depths; it is one statement: recursive closure + UPDATE of exactly the rows that fall',
    "reinstate = reinstateRetraction of the first service copy's retraction (receipt, events, money lines, committed); its limit is one statement on the same copy retracted again: recursive walk over that retraction's beliefs + UPDATE back to ACTIVE, rolled back",
  );

  const table = {
    columns: [
      'store',
      'beliefs in store',
      'HNSW',
      'shape',
      'blast radius',
      'retracted',
      'survivors',
      'levels',
      'retractBelief',
      'bare-SQL limit',
      'ratio',
      'per-belief',
      'speed-up',
      'reinstate',
      'reinstate limit',
      'reinstate ratio',
      'peak RSS',
      'RSS rise',
      'load',
    ],
    rows: [...rows]
      .sort((a, b) => a.unrelated - b.unrelated || a.n - b.n || SHAPES.indexOf(a.shape) - SHAPES.indexOf(b.shape))
      .map((r): Cell[] => [
        r.store,
        fmtCount(r.storeBeliefs),
        r.hnsw ? 'yes' : 'no',
        r.shape,
        fmtCount(r.n),
        r.retracted,
        r.survivors,
        r.levels,
        fmtMs(r.serviceMs),
        fmtMs(r.bareMs),
        fmtRatio(r.serviceMs / r.bareMs),
        r.perBeliefMs === null ? null : fmtMs(r.perBeliefMs),
        r.perBeliefMs === null ? null : fmtRatio(r.perBeliefMs / r.serviceMs),
        r.reinstateMs === null ? null : fmtMs(r.reinstateMs),
        r.bareReinstateMs === null ? null : fmtMs(r.bareReinstateMs),
        r.reinstateMs === null || r.bareReinstateMs === null ? null : fmtRatio(r.reinstateMs / r.bareReinstateMs),
        fmtMB(r.serviceMaxRssBytes),
        fmtMB(r.serviceMaxRssBytes - r.serviceRssBeforeBytes),
        r.load1.toFixed(1),
      ]),
    notes: [
      `times: median of ${ctx.repeat} runs at ≤ 10k and of ${ctx.repeatLarge} above, each on a fresh copy; ratio = retractBelief / bare-SQL limit; speed-up = per-belief traversal / retractBelief;`,
      'peak RSS = kernel peak of the child process that ran retractBelief (start-up and the open store included); RSS rise = that peak minus its RSS just before the call;',
      `load = the machine's 1-minute load average after the scenario (${os.cpus().length} CPUs; other processes share them)`,
    ],
  };

  const charts = [];
  for (const shape of SHAPES) {
    const rs = rows.filter((r) => r.shape === shape);
    if (rs.length === 0) continue;
    const series = [];
    for (const u of stores) {
      const s = rs.filter((r) => r.unrelated === u);
      const tag = u === 0 ? 'graphs only' : `+${fmtCount(u)}`;
      series.push({ name: `retractBelief (${tag})`, points: s.map((r) => [r.n, r.serviceMs] as [number, number]) });
      series.push({
        name: `bare-SQL limit (${tag})`,
        points: s.map((r) => [r.n, r.bareMs] as [number, number]),
        dashed: true,
      });
      series.push({
        name: `per-belief (${tag})`,
        points: s.filter((r) => r.perBeliefMs !== null).map((r) => [r.n, r.perBeliefMs!] as [number, number]),
        dashed: true,
      });
    }
    charts.push({
      name: `cascade-${ctx.engine}-${shape}`,
      svg: lineChart({
        title: `cascade on ${ctx.engine}: ${shape}`,
        xLabel: 'blast radius (beliefs)',
        yLabel: 'wall time (ms)',
        xLog: true,
        yLog: true,
        series,
        yTick: (v) => compact(v),
      }),
    });
  }

  return {
    targets,
    table,
    data: { rows, sizes, stores, vacuums: ctx.vacuums },
    charts,
    phases: ctx.phases,
    caveats: ctx.caveats,
    engineVersions: ctx.versions,
  };
}

export const bench: Bench = {
  name: 'cascade',
  description:
    'retractBelief over blast radii of 1k–100k (tree, DAG with survivors, chain, comb, star), with and without a large unrelated store, vs the bare-SQL limit and a per-belief traversal',
  run,
};
