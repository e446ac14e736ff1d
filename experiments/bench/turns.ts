import http from 'node:http';
import os from 'node:os';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { createAgentDirect } from '../../src/agent/agent.service';
import { LocalEmbedder } from '../../src/embedding/local';
import { checkInvariants } from '../../src/invariants/check';
import { createApp } from '../../src/server/app';
import type { Store } from '../../src/store/engine';
import { txStats } from '../../src/store/tx';
import type { Bench, BenchOptions, BenchResult, Cell, Target } from './lib/bench';
import { fmtMs, fmtRatio } from './lib/report';
import { type BenchDb, freshDb } from './lib/stores';
import { lineChart } from './lib/svg';

/**
 * The turns benchmark: COMMIT throughput of `assertBelief` over HTTP GraphQL (a real server from
 * createApp on 127.0.0.1, keep-alive clients) against the raw SQL of the same transaction sent
 * through `pg` by as many clients, in the same run on the same database. Each arm runs for a fixed
 * duration with C clients that each loop: send one turn, wait for its answer, send the next.
 *
 * Workloads: `distinct` (every turn a new claim: BeliefAsserted) and `contended` (10 % of turns go
 * to one of 4 hot claims with the same value, so after the first they are corroborations that
 * serialise on the claim row lock; the raw arm does the same corroboration path: event only).
 */

const FLEET = 'bench';
const HOT_CLAIMS = 4;
const TOKEN = 'bench-bootstrap-token-0123456789';

type Workload = 'distinct' | 'contended';
type ArmKind = 'graphql' | 'raw';

interface ArmResult {
  arm: ArmKind;
  workload: Workload;
  clients: number;
  seconds: number;
  commits: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Serialization/deadlock retries: txStats.retries on the server; 40001/40P01 counted in the raw arm. */
  retries: number;
  outcomes: Record<string, number>;
  errors: number;
  /** The first failed turn's message (a turn fails when its retries are exhausted or the answer is an error). */
  firstError: string | null;
  loadavg: number[];
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Which claim turn `i` of client `c` writes: distinct per turn, or (contended) every 10th on a hot claim. */
function claimOf(arm: string, workload: Workload, c: number, i: number): { key: string; hot: boolean } {
  if (workload === 'contended' && i % 10 === 9) return { key: `turns/${arm}/hot/${(c + i) % HOT_CLAIMS}`, hot: true };
  return { key: `turns/${arm}/c${c}/${i}`, hot: false };
}

/** Runs `clients` loops of `turn` for `seconds`; each loop's latencies and outcome counts. */
async function drive(clients: number, seconds: number, turn: (c: number, i: number) => Promise<string>) {
  const latencies: number[] = [];
  const outcomes: Record<string, number> = {};
  let errors = 0;
  let firstError: unknown = null;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; performance.now() < end; i++) {
        const s = performance.now();
        try {
          const kind = await turn(c, i);
          latencies.push(performance.now() - s);
          outcomes[kind] = (outcomes[kind] ?? 0) + 1;
        } catch (e) {
          errors++;
          firstError ??= e;
          if (errors > 50) throw new Error(`too many failed turns; first: ${(firstError as Error)?.message ?? String(firstError)}`);
        }
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { latencies, outcomes, errors, elapsed, firstError };
}

// ------------------------------------------------------------------ GraphQL arm

const MUTATION = `mutation($i: AssertBeliefInput!) { assertBelief(input: $i) { __typename ... on BeliefAsserted { belief { id } } ... on BeliefCorroborated { belief { id } } } }`;

function postJson(agent: http.Agent, url: URL, token: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${token}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function graphqlArm(url: string, token: string, workload: Workload, clients: number, seconds: number, tag: string): Promise<ArmResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const u = new URL(url);
  const retriesBefore = txStats.retries;
  try {
    const r = await drive(clients, seconds, async (c, i) => {
      const { key } = claimOf(tag, workload, c, i);
      const body = JSON.stringify({ query: MUTATION, variables: { i: { claimKey: key, statement: `turn ${i} of client ${c} on ${key}`, value: { v: 1 } } } });
      const res = await postJson(agent, u, token, body);
      const j = JSON.parse(res.text) as { data?: { assertBelief?: { __typename: string } }; errors?: Array<{ message: string }> };
      if (res.status !== 200 || j.errors?.length || !j.data?.assertBelief) throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 300)}`);
      return j.data.assertBelief.__typename;
    });
    return finish('graphql', workload, clients, r, txStats.retries - retriesBefore);
  } finally {
    agent.destroy();
  }
}

function finish(arm: ArmKind, workload: Workload, clients: number, r: Awaited<ReturnType<typeof drive>>, retries: number): ArmResult {
  const commits = r.latencies.length;
  return {
    arm, workload, clients, seconds: r.elapsed, commits, perSecond: commits / r.elapsed,
    p50: pct(r.latencies, 50), p99: pct(r.latencies, 99), retries, outcomes: r.outcomes, errors: r.errors,
    firstError: r.firstError ? String((r.firstError as Error).message ?? r.firstError).slice(0, 300) : null, loadavg: os.loadavg(),
  };
}

// ------------------------------------------------------------------ raw-SQL arm

type Q = (text: string, params: unknown[]) => Promise<Array<Record<string, unknown>>>;
interface RawConn {
  /** Runs fn on one dedicated connection. */
  with<T>(fn: (q: Q) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

function rawConn(db: BenchDb, store: Store, clients: number): RawConn {
  if (db.location.engine === 'postgres') {
    const pool = new pg.Pool({ connectionString: db.location.databaseUrl, max: clients });
    return {
      async with(fn) {
        const c = await pool.connect();
        try {
          return await fn(async (text, params) => (await c.query(text, params)).rows);
        } finally {
          c.release();
        }
      },
      close: () => pool.end(),
    };
  }
  // PGlite has one connection: the raw arm borrows the store's own (the server is idle during it).
  return {
    with: (fn) => store.db.connection().execute((conn) => fn(async (text, params) => (await conn.executeQuery(CompiledQuery.raw(text, params))).rows as Array<Record<string, unknown>>)),
    close: async () => {},
  };
}

/**
 * The same COMMIT as assertBelief for a grounded belief, as bare statements: SERIALIZABLE, role and
 * fleet, create + lock the claim, (no premises to lock), read the ACTIVE belief, then insert the
 * belief, bump the claim and append BeliefAsserted — or, when the claim already holds the same
 * value, append BeliefCorroborated only. Retries 40001/40P01 like src/store/tx.ts.
 */
async function rawTurn(q: Q, agentId: string, key: string, statement: string, vector: string, counters: { retries: number }): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      await q('BEGIN ISOLATION LEVEL SERIALIZABLE', []);
      await q(`SELECT set_config('role', 'retract_app', true), set_config('retract.fleet', $1, true)`, [FLEET]);
      await q('INSERT INTO claims (fleet_id, key) VALUES ($1, $2) ON CONFLICT DO NOTHING', [FLEET, key]);
      await q('SELECT version, last_tx::text AS last_tx FROM claims WHERE fleet_id = $1 AND key = $2 FOR UPDATE', [FLEET, key]);
      const active = await q(`SELECT id::text AS id, value FROM beliefs WHERE fleet_id = $1 AND claim_key = $2 AND status = 'ACTIVE'`, [FLEET, key]);
      let kind: string;
      if (active.length > 0) {
        await q(`INSERT INTO events (fleet_id, type, actor_id, ids) VALUES ($1, 'BeliefCorroborated', $2, ARRAY[$3]::bigint[])`, [FLEET, agentId, active[0]!.id]);
        kind = 'BeliefCorroborated';
      } else {
        const [b] = await q(
          `INSERT INTO beliefs (fleet_id, claim_key, statement, value, evidence, author_id, grounded, embedding)
           VALUES ($1, $2, $3, $4, NULL, $5, true, $6::vector) RETURNING id::text AS id`,
          [FLEET, key, statement, JSON.stringify({ v: 1 }), agentId, vector],
        );
        await q('UPDATE claims SET version = version + 1, last_tx = pg_current_xact_id() WHERE fleet_id = $1 AND key = $2', [FLEET, key]);
        await q(`INSERT INTO events (fleet_id, type, actor_id, ids, data) VALUES ($1, 'BeliefAsserted', $2, ARRAY[$3]::bigint[], $4)`, [FLEET, agentId, b!.id, JSON.stringify({ claimKey: key })]);
        kind = 'BeliefAsserted';
      }
      await q('COMMIT', []);
      return kind;
    } catch (e) {
      await q('ROLLBACK', []).catch(() => {});
      const code = (e as { code?: string }).code;
      if ((code === '40001' || code === '40P01') && attempt < 10) {
        counters.retries++;
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(1000, 4 * 2 ** attempt)));
        continue;
      }
      throw e;
    }
  }
}

async function rawArm(conn: RawConn, agentId: string, vectors: string[], workload: Workload, clients: number, seconds: number, tag: string): Promise<ArmResult> {
  const counters = { retries: 0 };
  const r = await drive(clients, seconds, (c, i) => {
    const { key } = claimOf(tag, workload, c, i);
    return conn.with((q) => rawTurn(q, agentId, key, `turn ${i} of client ${c} on ${key}`, vectors[(c + i) % vectors.length]!, counters));
  });
  return finish('raw', workload, clients, r, counters.retries);
}

// ------------------------------------------------------------------ the benchmark

async function run(opts: BenchOptions): Promise<BenchResult> {
  const seconds = Number(opts.flags.seconds ?? 10);
  if (!(seconds > 0)) throw new Error('--seconds must be a positive number');
  const concurrency = typeof opts.flags.clients === 'string' ? opts.flags.clients.split(',').map(Number) : opts.size ? [opts.size] : [8, 32];
  const workloads: Workload[] = ['distinct', 'contended'];
  const serverPool = Number(opts.flags['server-pool'] ?? 10);
  const phases: Record<string, number> = {};
  const caveats: string[] = [];
  const results: ArmResult[] = [];
  const t0 = performance.now();
  const db = await freshDb(opts.engine, opts.serverUrl, 'retract_bench_turns');
  phases['create database'] = Math.round(performance.now() - t0);
  let versions: BenchResult['engineVersions'] = null;
  try {
    const store = await db.open(serverPool);
    const app = await createApp({
      config: { port: 0, host: '127.0.0.1', bootstrapToken: TOKEN, logLevel: 'silent' },
      store,
      embedder: new LocalEmbedder(),
      logger: pino({ level: 'silent' }),
    });
    try {
      await app.listen();
      const url = `${app.url().replace(/\/$/, '')}/graphql`.replace(/\/graphql\/graphql$/, '/graphql');
      const { agent, token } = await createAgentDirect(store, { fleet: FLEET, name: 'turns', scopes: ['beliefs:write', 'beliefs:read'] });
      const agentId = String((agent as { id: string }).id);
      const embedder = new LocalEmbedder();
      const vectors = (await embedder.embed(Array.from({ length: 64 }, (_, i) => `raw turn statement ${i}`))).map((e) => `[${e.join(',')}]`);
      const ver = await store.db.executeQuery<{ server: string; vector: string | null }>(
        CompiledQuery.raw(`SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector`),
      );
      versions = ver.rows[0] ?? null;
      const raw = rawConn(db, store, Math.max(...concurrency));
      try {
        // Warm both paths (plans, connections, JIT) outside the timed arms.
        await graphqlArm(url, token, 'distinct', 2, 1, 'warm-g');
        await rawArm(raw, agentId, vectors, 'distinct', 2, 1, 'warm-r');
        for (const clients of concurrency) {
          for (const workload of workloads) {
            for (const arm of ['raw', 'graphql'] as const) {
              const tag = `${arm}-${workload}-${clients}`;
              opts.log(`turns: ${arm} ${workload} × ${clients} clients for ${seconds} s`);
              const s = performance.now();
              const r = arm === 'graphql'
                ? await graphqlArm(url, token, workload, clients, seconds, tag)
                : await rawArm(raw, agentId, vectors, workload, clients, seconds, tag);
              phases[`measure ${tag}`] = Math.round(performance.now() - s);
              results.push(r);
              opts.log(`  ${r.commits} commits, ${r.perSecond.toFixed(1)}/s, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, retries ${r.retries}, errors ${r.errors}, load ${r.loadavg.map((x) => x.toFixed(1)).join(' ')}`);
            }
          }
        }
      } finally {
        await raw.close();
      }
    } finally {
      await app.close();
    }
    const s = performance.now();
    const v = await checkInvariants(store);
    phases['check invariants'] = Math.round(performance.now() - s);
    await store.close();
    if (v.length > 0) throw new Error(`invariants violated after the turns runs: ${JSON.stringify(v).slice(0, 2000)}`);
  } finally {
    if (opts.flags.keep !== true) await db.drop();
  }
  if (opts.engine === 'pglite') caveats.push('PGlite has ONE connection: every arm\'s transactions run one after another whatever the client count; the raw arm borrows the store\'s connection');
  caveats.push(
    `fixed ${seconds} s per arm; raw and GraphQL arms alternate in the same run on the same database; server pool ${serverPool} connections (the product default), raw arm one pg connection per client`,
    'clients, the GraphQL server and the raw arm share ONE Node process (the GraphQL figure includes its clients\' HTTP/JSON work on the same event loop)',
    'the raw arm sends a precomputed 512-d vector literal; the GraphQL arm embeds the statement (LocalEmbedder) as the product does; the raw arm sends no NOTIFY',
    'no premises: assertBelief skips the premise FOR SHARE lock when derivedFrom is empty, and so does the raw arm',
    `contended: 10 % of turns on ${HOT_CLAIMS} hot claims with the same value (corroborations after the first)`,
    `machine heavily loaded by other work: load average at the end ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`,
  );
  return report(results, concurrency, caveats, phases, versions, opts.engine);
}

function report(results: ArmResult[], concurrency: number[], caveats: string[], phases: Record<string, number>, versions: BenchResult['engineVersions'], engine: string): BenchResult {
  const targets: Target[] = [];
  const pairs = results.filter((r) => r.arm === 'graphql').map((g) => ({ g, r: results.find((x) => x.arm === 'raw' && x.workload === g.workload && x.clients === g.clients)! }));
  const worst = pairs.reduce<(typeof pairs)[number] | null>((w, p) => (!w || p.g.perSecond / p.r.perSecond < w.g.perSecond / w.r.perSecond ? p : w), null);
  if (worst) {
    const ratio = worst.g.perSecond / worst.r.perSecond;
    targets.push({
      label: `GraphQL assertBelief commits/s vs raw SQL, worst of ${pairs.length} (${worst.g.workload}, ${worst.g.clients} clients)`,
      figure: `${worst.g.perSecond.toFixed(1)}/s`, limit: `${worst.r.perSecond.toFixed(1)}/s`, ratio: `${(ratio * 100).toFixed(1)} %`, target: '≥ 40 %', met: ratio >= 0.4,
    });
  }
  for (const p of pairs) {
    if (p === worst) continue;
    const ratio = p.g.perSecond / p.r.perSecond;
    targets.push({
      label: `${p.g.workload}, ${p.g.clients} clients`, figure: `${p.g.perSecond.toFixed(1)}/s`, limit: `${p.r.perSecond.toFixed(1)}/s`,
      ratio: `${(ratio * 100).toFixed(1)} %`, target: '≥ 40 %', met: ratio >= 0.4,
    });
  }
  const rows: Cell[][] = results.map((r) => {
    const pair = r.arm === 'graphql' ? results.find((x) => x.arm === 'raw' && x.workload === r.workload && x.clients === r.clients) : undefined;
    return [
      r.workload, r.clients, r.arm === 'graphql' ? 'GraphQL/HTTP' : 'raw SQL (pg)', r.commits, r.perSecond.toFixed(1),
      pair ? `${((r.perSecond / pair.perSecond) * 100).toFixed(1)} %` : null, fmtMs(r.p50), fmtMs(r.p99), r.retries, r.errors,
      Object.entries(r.outcomes).map(([k, v]) => `${k.replace('Belief', '')} ${v}`).join(', '), r.loadavg.map((x) => x.toFixed(1)).join(' '),
    ];
  });
  const chart = lineChart({
    title: `turns on ${engine}: commits/s by concurrent clients`,
    xLabel: 'concurrent clients', yLabel: 'commits/s',
    series: (['distinct', 'contended'] as const).flatMap((w) => (['graphql', 'raw'] as const).map((a) => ({
      name: `${a === 'graphql' ? 'GraphQL' : 'raw SQL'} (${w})`, dashed: a === 'raw',
      points: results.filter((r) => r.arm === a && r.workload === w).map((r) => [r.clients, r.perSecond] as [number, number]),
    }))),
  });
  return {
    targets,
    table: {
      columns: ['workload', 'clients', 'arm', 'commits', 'commits/s', 'of raw', 'p50', 'p99', 'retries', 'errors', 'outcomes', 'loadavg 1/5/15'],
      rows,
      notes: [
        'of raw = GraphQL commits/s ÷ raw-SQL commits/s at the same workload and client count; latency = one turn from send to answer, retries included',
        'retries: GraphQL = txStats.retries on the server (SQLSTATE 40001/40P01 retried by src/store/tx.ts); raw = 40001/40P01 caught and retried by the raw arm',
        `arms measured: ${concurrency.join(', ')} clients`,
        ...results.filter((r) => r.firstError).map((r) => `${r.arm} ${r.workload} × ${r.clients}: ${r.errors} failed turns, first: ${r.firstError}`),
      ],
    },
    data: { results },
    charts: [{ name: `turns-${engine}-throughput`, svg: chart }],
    phases,
    caveats,
    engineVersions: versions,
  };
}

export const bench: Bench = {
  name: 'turns',
  description: 'assertBelief over HTTP GraphQL from 8 and 32 concurrent agents (distinct claims; 10 % contended) vs the raw SQL of the same transaction through pg, same run, same database',
  run,
};
