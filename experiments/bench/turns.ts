import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { createAgentDirect } from '../../src/agent/agent.service';
import { BELIEF_COLUMNS as SERVER_BELIEF_COLUMNS } from '../../src/belief/belief.repository';
import { LocalEmbedder } from '../../src/embedding/local';
import { checkInvariants } from '../../src/invariants/check';
import { createApp } from '../../src/server/app';
import type { Store } from '../../src/store/engine';
import type { Bench, BenchOptions, BenchResult, Cell, Target } from './lib/bench';
import { inChild } from './lib/child';
import { type Profiler, profiler } from './lib/profile';
import { fmtMs } from './lib/report';
import { freshDb } from './lib/stores';
import { lineChart } from './lib/svg';

/**
 * The turns benchmark: COMMIT throughput of `assertBelief` over HTTP GraphQL (a real server from
 * createApp on 127.0.0.1, keep-alive clients) against the raw SQL of the same transaction sent
 * through `pg` by as many clients, in the same run on the same database. Each arm runs for a fixed
 * duration with C clients that each loop: send one turn, wait for its answer, send the next.
 * On PostgreSQL both arms' clients run in a child process of their own (lib/child.ts), so neither
 * shares the server's event loop, and both pay the same client-process cost; each child warms its
 * own path for a second before the timed window.
 *
 * Workloads: `distinct` (every turn a new claim: BeliefAsserted) and `contended` (10 % of turns go
 * to one of 4 hot claims with the same value, so after the first they are corroborations that
 * serialise on the claim row lock; the raw arm does the same corroboration path: event only).
 */

const SELF = fileURLToPath(import.meta.url);
const FLEET = 'bench';
const WARM_SECONDS = 1;
const HOT_CLAIMS = 4;
export const TOKEN = 'bench-bootstrap-token-0123456789';

type Workload = 'distinct' | 'contended';
type ArmKind = 'graphql' | 'raw';

export interface ArmResult {
  arm: ArmKind;
  workload: Workload;
  clients: number;
  seconds: number;
  commits: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Serialization/deadlock retries: store.tx.stats.retries on the server; 40001/40P01 counted in the raw arm. */
  retries: number;
  outcomes: Record<string, number>;
  errors: number;
  /** The first failed turn's message (a turn fails when its retries are exhausted or the answer is an error). */
  firstError: string | null;
  loadavg: number[];
  /** CPU (user + system) per commit during the timed window, ms: this (the server's) process, the clients' child process, and the PostgreSQL backends of the bench database; null where not measured. */
  cpuPerCommit: { server: number | null; clients: number | null; postgres: number | null };
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
          // A turn that gave up on serialization conflicts after its retries is a measured outcome (counted
          // in `errors`, reported per arm); anything else failing more than 50 times stops the run.
          const msg = (e as Error)?.message ?? String(e);
          if (/could not serialize|kept conflicting|CONFLICT|40001/.test(msg)) continue;
          if (errors > 50)
            throw new Error(`too many failed turns; first: ${(firstError as Error)?.message ?? String(firstError)}`);
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
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${token}`,
        },
      },
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

/** The GraphQL arm's clients: `clients` keep-alive HTTP loops of assertBelief, `seconds` long. */
async function graphqlClients(
  url: string,
  token: string,
  workload: Workload,
  clients: number,
  seconds: number,
  tag: string,
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const u = new URL(url);
  try {
    return await drive(clients, seconds, async (c, i) => {
      const { key } = claimOf(tag, workload, c, i);
      const body = JSON.stringify({
        query: MUTATION,
        variables: { i: { claimKey: key, statement: `turn ${i} of client ${c} on ${key}`, value: { v: 1 } } },
      });
      const res = await postJson(agent, u, token, body);
      const j = JSON.parse(res.text) as {
        data?: { assertBelief?: { __typename: string } };
        errors?: Array<{ message: string }>;
      };
      if (res.status !== 200 || j.errors?.length || !j.data?.assertBelief)
        throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 300)}`);
      return j.data.assertBelief.__typename;
    });
  } finally {
    agent.destroy();
  }
}

function finish(
  arm: ArmKind,
  workload: Workload,
  clients: number,
  r: Omit<ChildOutput, 'retries' | 'cpuMs'>,
  retries: number,
  cpuMs: { server: number | null; clients: number | null; postgres: number | null },
): ArmResult {
  const commits = r.latencies.length;
  const per = (ms: number | null) => (ms === null || commits === 0 ? null : ms / commits);
  return {
    arm,
    workload,
    clients,
    seconds: r.elapsed,
    commits,
    perSecond: commits / r.elapsed,
    p50: pct(r.latencies, 50),
    p99: pct(r.latencies, 99),
    retries,
    outcomes: r.outcomes,
    errors: r.errors,
    firstError: r.firstError,
    loadavg: os.loadavg(),
    cpuPerCommit: { server: per(cpuMs.server), clients: per(cpuMs.clients), postgres: per(cpuMs.postgres) },
  };
}

/** CPU ms (user + system) a process has used, from /proc (Linux; clock ticks of 10 ms); null elsewhere or when it is gone. */
function procCpuMs(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return null;
  }
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** CPU of this database's PostgreSQL backends between two calls (the same backends; the pool keeps its connections). */
async function postgresCpu(store: Store): Promise<() => Promise<number | null>> {
  if (store.engine !== 'postgres' || !fs.existsSync('/proc/self/stat')) return async () => null;
  const pids = (
    await store.db.executeQuery<{ pid: number }>(
      CompiledQuery.raw('SELECT pid FROM pg_stat_activity WHERE datname = current_database()'),
    )
  ).rows.map((r) => r.pid);
  const before = new Map(pids.map((p) => [p, procCpuMs(p)]));
  return async () => {
    let sum = 0;
    let read = 0;
    for (const [p, b] of before) {
      const a = procCpuMs(p);
      if (a === null || b === null) continue; // closed since (an idle pool connection) or not readable
      sum += a - b;
      read++;
    }
    return read > 0 ? sum : null;
  };
}

// ------------------------------------------------------------------ raw-SQL arm

type Q = (text: string, params: unknown[]) => Promise<Array<Record<string, unknown>>>;
interface RawConn {
  /** Runs fn on one dedicated connection. */
  with<T>(fn: (q: Q) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** PGlite has one connection: the in-process raw arm borrows the store's own (the server is idle during it). */
function pgliteRawConn(store: Store): RawConn {
  return {
    with: (fn) =>
      store.db
        .connection()
        .execute((conn) =>
          fn(
            async (text, params) =>
              (await conn.executeQuery(CompiledQuery.raw(text, params))).rows as Array<Record<string, unknown>>,
          ),
        ),
    close: async () => {},
  };
}

/** The server's column list (src/belief/belief.repository.ts), so the raw arm's statements cannot drift from it. */
const BELIEF_COLUMNS = SERVER_BELIEF_COLUMNS.join(', ');

/**
 * The same COMMIT as assertBelief for a grounded belief, as the same bare statements (what the
 * server sends per turn is listed by `npx tsx experiments/turns_statements.ts`): BEGIN SERIALIZABLE
 * with role and fleet in one round trip, create + lock the claim and read its ACTIVE belief with the
 * value comparison in one statement (drawing the new belief's id when there is none; no premises to lock),
 * then insert the belief under that id + bump the claim + append BeliefAsserted in one statement — or, when the claim already holds the same value, append
 * BeliefCorroborated only; COMMIT. Retries 40001/40P01 like src/store/tx.ts (10 attempts, same backoff).
 */
async function rawTurn(
  q: Q,
  agentId: string,
  key: string,
  statement: string,
  vector: string,
  counters: { retries: number },
): Promise<string> {
  const value = JSON.stringify({ v: 1 });
  for (let attempt = 1; ; attempt++) {
    try {
      await q(
        `start transaction isolation level serializable read write; SELECT set_config('role', 'retract_app', true), set_config('retract.fleet', '${FLEET}', true)`,
        [],
      );
      // One statement: create + lock the claim and read its ACTIVE belief with the value comparison
      // (src/belief/claim.repository.ts lockClaimReadActive; no READ snapshot in this workload).
      const claim = await q(
        `WITH created AS (INSERT INTO claims (fleet_id, key) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING version, last_tx),
              locked AS (SELECT version, last_tx FROM claims WHERE fleet_id = $3 AND key = $4 AND NOT EXISTS (SELECT FROM created) FOR UPDATE),
              active AS MATERIALIZED (SELECT ${BELIEF_COLUMNS}, ($5::jsonb IS NOT DISTINCT FROM value) AS same_value
                FROM beliefs WHERE NOT EXISTS (SELECT FROM created) AND fleet_id = $6 AND (claim_key = $7 AND claim_key COLLATE "C" = $8) AND status = 'ACTIVE')
         SELECT c.version::text AS claim_version, (c.last_tx IS NULL OR $9::pg_snapshot IS NULL OR pg_visible_in_snapshot(c.last_tx, $10::pg_snapshot)) AS claim_visible,
                CASE WHEN a.id IS NULL THEN nextval('beliefs_id_seq')::text END AS next_belief_id, a.*
           FROM (SELECT version, last_tx FROM created UNION ALL SELECT version, last_tx FROM locked) c LEFT JOIN active a ON true`,
        [FLEET, key, FLEET, key, value, FLEET, key, key, null, null],
      );
      if (claim.length !== 1) throw new Error(`raw arm: expected one claim row for ${key}`);
      const active = claim[0]!.id === null ? [] : claim;
      let kind: string;
      if (active.length > 0 && active[0]!.same_value) {
        await q(
          'INSERT INTO events (fleet_id, type, actor_id, retraction_id, depth, ids, data) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [FLEET, 'BeliefCorroborated', agentId, null, null, [String(active[0]!.id)], null],
        );
        kind = 'BeliefCorroborated';
      } else if (active.length > 0) {
        throw new Error(`raw arm: claim ${key} holds a different value (the workload writes one value per claim)`);
      } else {
        await q(
          `WITH b AS (
             INSERT INTO beliefs (id, fleet_id, claim_key, statement, value, evidence, author_id, grounded, embedding) OVERRIDING SYSTEM VALUE
             VALUES ($10, $1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${BELIEF_COLUMNS}
           ), bumped AS (
             UPDATE claims SET version = version + 1, last_tx = pg_current_xact_id() WHERE fleet_id = $1 AND key = $2
           ), event AS (
             INSERT INTO events (fleet_id, type, actor_id, ids, data) VALUES ($1, 'BeliefAsserted', $6, ARRAY[$10::bigint], $9::jsonb)
           )
           SELECT * FROM b`,
          [
            FLEET,
            key,
            statement,
            value,
            null,
            agentId,
            true,
            vector,
            JSON.stringify({ claimKey: key }),
            claim[0]!.next_belief_id,
          ],
        );
        kind = 'BeliefAsserted';
      }
      await q('commit', []);
      return kind;
    } catch (e) {
      await q('rollback', []).catch(() => {});
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

/** The raw arm's clients: `clients` loops of rawTurn, `seconds` long; the 40001/40P01 retries they made. */
async function rawClients(
  conn: RawConn,
  agentId: string,
  embedder: LocalEmbedder,
  workload: Workload,
  clients: number,
  seconds: number,
  tag: string,
) {
  const counters = { retries: 0 };
  const r = await drive(clients, seconds, async (c, i) => {
    const { key } = claimOf(tag, workload, c, i);
    const statement = `turn ${i} of client ${c} on ${key}`;
    // Each turn inserts the embedding of its own statement, as the server does (belief.service embeds
    // every statement). A handful of recycled vectors would make the raw arm's HNSW inserts near-free
    // duplicates: 0.79 vs 2.62 ms of PostgreSQL CPU an insert at 4k rows (FINDINGS §6, turns).
    const [e] = await embedder.embed([statement]);
    return conn.with((q) => rawTurn(q, agentId, key, statement, `[${e!.join(',')}]`, counters));
  });
  return { ...r, retries: counters.retries };
}

interface ChildInput {
  arm: ArmKind;
  workload: Workload;
  clients: number;
  seconds: number;
  tag: string;
  url: string;
  token: string;
  databaseUrl: string;
  agentId: string;
}

type ChildOutput = Omit<Awaited<ReturnType<typeof drive>>, 'firstError'> & {
  firstError: string | null;
  retries: number;
  cpuMs: number;
};

/**
 * Child-process entry (lib/child.ts): one arm's clients. Warms the same path for WARM_SECONDS (its
 * own claims), sends progress 'start', runs the timed window, sends progress 'end'.
 */
export async function work(t: ChildInput): Promise<ChildOutput> {
  const start = () => process.send?.({ progress: 'start' });
  const end = () => process.send?.({ progress: 'end' });
  if (t.arm === 'graphql') {
    await graphqlClients(t.url, t.token, 'distinct', t.clients, WARM_SECONDS, `${t.tag}-warm`);
    start();
    const c0 = cpuMs();
    const r = await graphqlClients(t.url, t.token, t.workload, t.clients, t.seconds, t.tag);
    const c1 = cpuMs();
    end();
    return { ...r, firstError: errorText(r.firstError), retries: 0, cpuMs: c1 - c0 };
  }
  const pool = new pg.Pool({ connectionString: t.databaseUrl, max: t.clients });
  const conn: RawConn = {
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
  try {
    const embedder = new LocalEmbedder();
    await rawClients(conn, t.agentId, embedder, 'distinct', t.clients, WARM_SECONDS, `${t.tag}-warm`);
    start();
    const c0 = cpuMs();
    const r = await rawClients(conn, t.agentId, embedder, t.workload, t.clients, t.seconds, t.tag);
    const c1 = cpuMs();
    end();
    return { ...r, firstError: errorText(r.firstError), cpuMs: c1 - c0 };
  } finally {
    await conn.close();
  }
}

function errorText(e: unknown): string | null {
  return e ? String((e as Error).message ?? e).slice(0, 300) : null;
}

/**
 * One arm, clients in a child process; GraphQL retries are the server's (store.tx.stats) during the timed
 * window, and the CPU of this process and of the database's backends is taken over the same window.
 */
export async function childArm(store: Store, t: ChildInput, prof?: Profiler): Promise<ArmResult> {
  let before = { retries: 0, cpu: 0 };
  let after: { retries: number; cpu: number } | null = null;
  let pgCpu: Promise<() => Promise<number | null>> | null = null;
  let pgCpuMs: Promise<number | null> | null = null;
  let profiled: Promise<string | null> | null = null;
  const { output } = await inChild<ChildInput, ChildOutput>(SELF, t, {
    timeoutMs: (t.seconds + WARM_SECONDS + 120) * 1000,
    onProgress: (p) => {
      if (p === 'start') {
        before = { retries: store.tx.stats.retries, cpu: cpuMs() };
        pgCpu = postgresCpu(store);
        if (t.arm === 'graphql') void prof?.start();
      }
      if (p === 'end') {
        after = { retries: store.tx.stats.retries, cpu: cpuMs() };
        pgCpuMs = pgCpu ? pgCpu.then((f) => f()) : null;
        if (t.arm === 'graphql') profiled = prof?.stop(`turns-${t.tag}`) ?? null;
      }
    },
  });
  const end = after ?? { retries: store.tx.stats.retries, cpu: cpuMs() };
  await profiled;
  const retries = t.arm === 'graphql' ? end.retries - before.retries : output.retries;
  return finish(t.arm, t.workload, t.clients, output, retries, {
    server: end.cpu - before.cpu,
    clients: output.cpuMs,
    postgres: pgCpuMs ? await pgCpuMs : null,
  });
}

/** PGlite: the raw arm runs in this process on the store's one connection (the server is idle during it). */
async function inProcessRawArm(
  conn: RawConn,
  agentId: string,
  embedder: LocalEmbedder,
  workload: Workload,
  clients: number,
  seconds: number,
  tag: string,
): Promise<ArmResult> {
  const c0 = cpuMs();
  const r = await rawClients(conn, agentId, embedder, workload, clients, seconds, tag);
  return finish('raw', workload, clients, { ...r, firstError: errorText(r.firstError) }, r.retries, {
    server: null,
    clients: cpuMs() - c0,
    postgres: null,
  });
}

// ------------------------------------------------------------------ the benchmark

async function run(opts: BenchOptions): Promise<BenchResult> {
  const seconds = Number(opts.flags.seconds ?? 10);
  if (!(seconds > 0)) throw new Error('--seconds must be a positive number');
  const concurrency =
    typeof opts.flags.clients === 'string'
      ? opts.flags.clients.split(',').map(Number)
      : opts.size
        ? [opts.size]
        : [8, 32];
  const workloads: Workload[] = ['distinct', 'contended'];
  const serverPool = Number(opts.flags['server-pool'] ?? 10);
  // --cpu-profile [DIR]: a CPU profile of the server over each GraphQL arm's timed window (lib/profile.ts).
  const prof = profiler(opts.flags['cpu-profile']);
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
      const { agent, token } = await createAgentDirect(store, {
        fleet: FLEET,
        name: 'turns',
        scopes: ['beliefs:write', 'beliefs:read'],
      });
      const agentId = String((agent as { id: string }).id);
      const ver = await store.db.executeQuery<{ server: string; vector: string | null }>(
        CompiledQuery.raw(
          `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector`,
        ),
      );
      versions = ver.rows[0] ?? null;
      const databaseUrl = db.location.engine === 'postgres' ? db.location.databaseUrl : '';
      const embedder = new LocalEmbedder();
      for (const clients of concurrency) {
        for (const workload of workloads) {
          for (const arm of ['raw', 'graphql'] as const) {
            const tag = `${arm}-${workload}-${clients}`;
            opts.log(`turns: ${arm} ${workload} × ${clients} clients for ${seconds} s`);
            const s = performance.now();
            const r =
              arm === 'raw' && db.location.engine === 'pglite'
                ? await inProcessRawArm(pgliteRawConn(store), agentId, embedder, workload, clients, seconds, tag)
                : await childArm(
                    store,
                    { arm, workload, clients, seconds, tag, url, token, databaseUrl, agentId },
                    prof,
                  );
            phases[`measure ${tag}`] = Math.round(performance.now() - s);
            results.push(r);
            opts.log(
              `  ${r.commits} commits, ${r.perSecond.toFixed(1)}/s, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, retries ${r.retries}, errors ${r.errors}, load ${r.loadavg.map((x) => x.toFixed(1)).join(' ')}`,
            );
          }
        }
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
  if (opts.engine === 'pglite')
    caveats.push(
      "PGlite has ONE connection: every arm's transactions run one after another whatever the client count; the raw arm runs in the server's process on the store's connection (the GraphQL clients in a child process)",
    );
  caveats.push(
    `fixed ${seconds} s per arm after a ${WARM_SECONDS} s warm-up of the same arm; raw and GraphQL arms alternate in the same run on the same database; server pool ${serverPool} connections (the product default), raw arm one pg connection per client`,
    "each arm's clients run in a child process of their own (one per arm), never on the server's event loop; the two processes and PostgreSQL share the machine's CPUs",
    "the raw arm sends the statements assertBelief sends (same text shape, parameters, isolation, retries: 10 attempts, same backoff) and inserts the LocalEmbedder embedding of each turn's own statement, as the server does; neither arm sends a NOTIFY per turn (the server sends at most one per 50 ms for turns, outside the transaction)",
    'guarantees on in the GraphQL arm: SERIALIZABLE with the 40001/40P01 retry, the fleet lock, row-level security under retract_app, bearer-token authentication and scope-auth on every field, the depth/alias/token/cost limits, error masking, GET /metrics counting every operation (the product default); invariants checked after the run',
    'no premises: assertBelief skips the premise FOR SHARE lock when derivedFrom is empty, and so does the raw arm',
    `contended: 10 % of turns on ${HOT_CLAIMS} hot claims with the same value (corroborations after the first)`,
    `load average at the end ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} on ${os.cpus().length} CPUs (the bench's own processes included)`,
  );
  return report(results, concurrency, caveats, phases, versions, opts.engine);
}

const cpu = (ms: number | null) => (ms === null ? null : `${ms.toFixed(2)} ms`);

function report(
  results: ArmResult[],
  concurrency: number[],
  caveats: string[],
  phases: Record<string, number>,
  versions: BenchResult['engineVersions'],
  engine: string,
): BenchResult {
  const targets: Target[] = [];
  const pairs = results
    .filter((r) => r.arm === 'graphql')
    .map((g) => ({
      g,
      r: results.find((x) => x.arm === 'raw' && x.workload === g.workload && x.clients === g.clients)!,
    }));
  const worst = pairs.reduce<(typeof pairs)[number] | null>(
    (w, p) => (!w || p.g.perSecond / p.r.perSecond < w.g.perSecond / w.r.perSecond ? p : w),
    null,
  );
  if (worst) {
    const ratio = worst.g.perSecond / worst.r.perSecond;
    targets.push({
      label: `GraphQL assertBelief commits/s vs raw SQL, worst of ${pairs.length} (${worst.g.workload}, ${worst.g.clients} clients)`,
      figure: `${worst.g.perSecond.toFixed(1)}/s`,
      limit: `${worst.r.perSecond.toFixed(1)}/s`,
      ratio: `${(ratio * 100).toFixed(1)} %`,
      target: '≥ 70 %',
      met: ratio >= 0.7,
    });
  }
  for (const p of pairs) {
    if (p === worst) continue;
    const ratio = p.g.perSecond / p.r.perSecond;
    targets.push({
      label: `${p.g.workload}, ${p.g.clients} clients`,
      figure: `${p.g.perSecond.toFixed(1)}/s`,
      limit: `${p.r.perSecond.toFixed(1)}/s`,
      ratio: `${(ratio * 100).toFixed(1)} %`,
      target: '≥ 70 %',
      met: ratio >= 0.7,
    });
  }
  // Issue 35: the server's own CPU per committed turn, worst GraphQL cell (process.cpuUsage over the timed window).
  const cpuWorst = pairs
    .map((p) => p.g)
    .filter((g) => g.cpuPerCommit.server !== null)
    .reduce<ArmResult | null>((w, g) => (!w || g.cpuPerCommit.server! > w.cpuPerCommit.server! ? g : w), null);
  if (cpuWorst)
    targets.push({
      label: `server CPU per committed turn, worst GraphQL cell (${cpuWorst.workload}, ${cpuWorst.clients} clients)`,
      figure: `${cpuWorst.cpuPerCommit.server!.toFixed(2)} ms`,
      limit: '1.0 ms',
      ratio: `${cpuWorst.cpuPerCommit.server!.toFixed(2)}×`,
      target: '≤ 1.0 ms',
      met: cpuWorst.cpuPerCommit.server! <= 1.0,
    });
  const rows: Cell[][] = results.map((r) => {
    const pair =
      r.arm === 'graphql'
        ? results.find((x) => x.arm === 'raw' && x.workload === r.workload && x.clients === r.clients)
        : undefined;
    return [
      r.workload,
      r.clients,
      r.arm === 'graphql' ? 'GraphQL/HTTP' : 'raw SQL (pg)',
      r.commits,
      r.perSecond.toFixed(1),
      pair ? `${((r.perSecond / pair.perSecond) * 100).toFixed(1)} %` : null,
      fmtMs(r.p50),
      fmtMs(r.p99),
      r.retries,
      r.errors,
      cpu(r.cpuPerCommit.server),
      cpu(r.cpuPerCommit.clients),
      cpu(r.cpuPerCommit.postgres),
      Object.entries(r.outcomes)
        .map(([k, v]) => `${k.replace('Belief', '')} ${v}`)
        .join(', '),
      r.loadavg.map((x) => x.toFixed(1)).join(' '),
    ];
  });
  const chart = lineChart({
    title: `turns on ${engine}: commits/s by concurrent clients`,
    xLabel: 'concurrent clients',
    yLabel: 'commits/s',
    series: (['distinct', 'contended'] as const).flatMap((w) =>
      (['graphql', 'raw'] as const).map((a) => ({
        name: `${a === 'graphql' ? 'GraphQL' : 'raw SQL'} (${w})`,
        dashed: a === 'raw',
        points: results
          .filter((r) => r.arm === a && r.workload === w)
          .map((r) => [r.clients, r.perSecond] as [number, number]),
      })),
    ),
  });
  return {
    targets,
    table: {
      columns: [
        'workload',
        'clients',
        'arm',
        'commits',
        'commits/s',
        'of raw',
        'p50',
        'p99',
        'retries',
        'errors',
        'server CPU',
        'client CPU',
        'pg CPU',
        'outcomes',
        'loadavg 1/5/15',
      ],
      rows,
      notes: [
        'of raw = GraphQL commits/s ÷ raw-SQL commits/s at the same workload and client count; latency = one turn from send to answer, retries included',
        "server / client / pg CPU = CPU ms (user + system) per commit in the timed window: the server's process (idle in the raw arm), the clients' child process, the bench database's PostgreSQL backends (/proc, 10 ms ticks; background processes such as the WAL writer not counted)",
        'retries: GraphQL = tx.stats.retries of the server store (SQLSTATE 40001/40P01 retried by src/store/tx.ts); raw = 40001/40P01 caught and retried by the raw arm',
        `arms measured: ${concurrency.join(', ')} clients`,
        ...results
          .filter((r) => r.firstError)
          .map((r) => `${r.arm} ${r.workload} × ${r.clients}: ${r.errors} failed turns, first: ${r.firstError}`),
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
  description:
    'assertBelief over HTTP GraphQL from 8 and 32 concurrent agents (distinct claims; 10 % contended) vs the raw SQL of the same transaction through pg, same run, same database',
  run,
};
