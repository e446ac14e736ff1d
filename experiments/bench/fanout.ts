import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import pino from 'pino';
import WebSocket from 'ws';
import { createAgentDirect } from '../../src/agent/agent.service';
import { gid } from '../../src/kernel/ids';
import { LocalEmbedder } from '../../src/embedding/local';
import { checkInvariants } from '../../src/invariants/check';
import { createApp } from '../../src/server/app';
import { encodeCursor, headCursor } from '../../src/event/event.repository';
import { readTx } from '../../src/store/tx';
import type { Bench, BenchOptions, BenchResult, Cell, Target } from './lib/bench';
import { inChild } from './lib/child';
import { fmtCount, fmtMs, phaseTimer } from './lib/report';
import { freshDb } from './lib/stores';
import { lineChart } from './lib/svg';

/**
 * The fan-out benchmark: S graphql-ws subscribers (real `graphql-ws` clients over the `ws`
 * package, 127.0.0.1, in a child process so their work does not run on the server's event loop)
 * on one server; a cascade of N beliefs (a fan-out-4 tree seeded by bulk SQL) is retracted through
 * the API (retractBelief over HTTP, from the same child). Measured per subscriber: the time from
 * the server's COMMIT of the retraction to the moment that subscriber receives RetractionCommitted
 * (the target), and, as bounds, from the request, the event row's `at`, the HTTP response and the
 * first subscriber's receipt to that moment. Two arms, each on its own tree:
 * granularity BELIEF (the default: one message per belief, 1,002 per subscriber for 1k) and LEVEL
 * (one BeliefsRetracted per level of ≤ 500 beliefs). `--granularity BELIEF|LEVEL|BELIEF,LEVEL`.
 */

const FLEET = 'bench';
const SELF = fileURLToPath(import.meta.url);
const TOKEN = 'bench-bootstrap-token-0123456789';
const SUBSCRIPTION = `subscription($after: String, $g: RetractionEventGranularity) {
  retractionEvents(after: $after, granularity: $g) { __typename at ... on BeliefsRetracted { count } } }`;
type Granularity = 'BELIEF' | 'LEVEL';

interface ChildInput {
  http: string;
  ws: string;
  token: string;
  subscribers: number;
  probe: string;
  root: string;
  /** Every subscriber starts after this cursor (the log's head before the probe), so none can start past the probe. */
  after: string;
  timeoutMs: number;
  granularity: Granularity;
}

interface ChildOutput {
  /** Epoch ms (performance.timeOrigin + now) of: request sent, response arrived. */
  sentAt: number;
  respondedAt: number;
  retractionId: string;
  /** Per subscriber: epoch ms it received RetractionCommitted, the event's `at`, events received for the cascade. */
  received: Array<{ at: number; eventAt: string; events: number; beliefRetracted: number }>;
  connectMs: number;
  probeMs: number;
  loadavg: number[];
  /** CPU (user + system) of this process from sending the measured retraction to the last RetractionCommitted, ms. */
  cpuMs: number;
}

const now = () => performance.timeOrigin + performance.now();

async function gql(url: string, token: string, query: string, variables: Record<string, unknown>) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const j = (await r.json()) as { data?: any; errors?: unknown[] };
  if (!r.ok || j.errors?.length) throw new Error(`HTTP ${r.status}: ${JSON.stringify(j).slice(0, 500)}`);
  return j.data;
}

const RETRACT = 'mutation($b: ID!, $r: String!) { retractBelief(input: { beliefId: $b, reason: $r }) { id } }';

/** Child-process entry (lib/child.ts): subscribers, the probe, the measured retraction. */
export async function work(t: ChildInput): Promise<ChildOutput> {
  const clients: Client[] = [];
  const state = Array.from({ length: t.subscribers }, () => ({
    committed: 0,
    events: 0,
    beliefRetracted: 0,
    at: 0,
    eventAt: '',
    error: null as unknown,
  }));
  const waiters = new Set<() => void>();
  const poke = () => {
    for (const w of waiters) w();
  };
  const until = (pred: () => boolean, what: string) =>
    new Promise<void>((resolve, reject) => {
      if (pred()) return resolve();
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}`));
      }, t.timeoutMs);
      const check = () => {
        if (pred()) {
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        }
      };
      waiters.add(check);
    });
  const c0 = now();
  try {
    let acked = 0;
    for (let i = 0; i < t.subscribers; i++) {
      const s = state[i]!;
      const client = createClient({
        url: t.ws,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${t.token}` },
        retryAttempts: 0,
        lazy: false,
        on: {
          connected: () => {
            acked++;
            poke();
          },
        },
      });
      clients.push(client);
      client.subscribe<{ retractionEvents: { __typename: string; at: string; count?: number } }>(
        { query: SUBSCRIPTION, variables: { after: t.after, g: t.granularity } },
        {
          next: (m) => {
            const e = m.data?.retractionEvents;
            if (!e) {
              s.error = m.errors ?? m;
              poke();
              return;
            }
            if (s.committed === 1) {
              s.events++;
              if (e.__typename === 'BeliefRetracted') s.beliefRetracted++;
              if (e.__typename === 'BeliefsRetracted') s.beliefRetracted += e.count ?? 0;
            }
            if (e.__typename === 'RetractionCommitted') {
              s.committed++;
              if (s.committed === 2) {
                s.at = now();
                s.eventAt = e.at;
              }
              poke();
            }
          },
          error: (e) => {
            s.error = e;
            poke();
          },
          complete: () => {},
        },
      );
    }
    await until(() => acked === t.subscribers, 'every connection acknowledged');
    const connectMs = now() - c0;
    // A probe retraction until every subscriber has seen one: then all are live ("from now" was taken).
    const p0 = now();
    await gql(t.http, t.token, RETRACT, { b: t.probe, r: 'probe' });
    await until(
      () => state.every((s) => s.committed >= 1) || state.some((s) => s.error),
      'every subscriber to see the probe',
    );
    const bad = state.find((s) => s.error);
    if (bad) throw new Error(`a subscriber failed: ${JSON.stringify(bad.error).slice(0, 500)}`);
    const probeMs = now() - p0;
    await new Promise((r) => setTimeout(r, 500));
    process.send?.({ progress: 'measure-start' });
    const cpu0 = process.cpuUsage();
    const sentAt = now();
    const d = await gql(t.http, t.token, RETRACT, { b: t.root, r: 'benchmark: the root turned out false' });
    const respondedAt = now();
    await until(
      () => state.every((s) => s.committed >= 2) || state.some((s) => s.error),
      'every subscriber to see RetractionCommitted',
    );
    const cpu = process.cpuUsage(cpu0);
    process.send?.({ progress: 'measure-end' });
    const bad2 = state.find((s) => s.error);
    if (bad2) throw new Error(`a subscriber failed: ${JSON.stringify(bad2.error).slice(0, 500)}`);
    return {
      sentAt,
      respondedAt,
      retractionId: d.retractBelief.id as string,
      received: state.map((s) => ({
        at: s.at,
        eventAt: s.eventAt,
        events: s.events,
        beliefRetracted: s.beliefRetracted,
      })),
      connectMs,
      probeMs,
      loadavg: os.loadavg(),
      cpuMs: (cpu.user + cpu.system) / 1000,
    };
  } finally {
    // dispose() of a client whose connection never opened can wait forever: never let it hide the error.
    await Promise.race([
      Promise.all(clients.map((c) => c.dispose())),
      new Promise((r) => setTimeout(r, 5_000).unref()),
    ]);
  }
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

interface ArmResult {
  granularity: Granularity;
  output: ChildOutput;
  eventRowAt: string;
  cascadeMs: number | null;
  tailReads: number | null;
  /** The server process's CPU over the measured window (from the request to the last receipt), ms. */
  serverCpuMs: number | null;
  /** From the server's COMMIT of the retraction (the issue's measure). */
  fromCommit: number[];
  fromResponse: number[];
  fromEventAt: number[];
  fromSend: number[];
  fromFirst: number[];
  messages: number;
}

async function run(opts: BenchOptions): Promise<BenchResult> {
  const n = opts.size ?? 1000;
  const subscribers = Number(opts.flags.subscribers ?? 200);
  const arms = String(opts.flags.granularity ?? 'BELIEF,LEVEL')
    .split(',')
    .map((g) => g.trim().toUpperCase());
  for (const g of arms)
    if (g !== 'BELIEF' && g !== 'LEVEL') throw new Error(`--granularity: each must be BELIEF or LEVEL, got ${g}`);
  const phases: Record<string, number> = {};
  const caveats: string[] = [];
  const time = phaseTimer(phases);
  const db = await time('create database', () => freshDb(opts.engine, opts.serverUrl, 'retract_bench_fanout'));
  let versions: BenchResult['engineVersions'] = null;
  const results: ArmResult[] = [];
  try {
    const store = await db.open(Number(opts.flags['server-pool'] ?? 10));
    try {
      const { token, agent } = await createAgentDirect(store, {
        fleet: FLEET,
        name: 'fanout',
        scopes: ['receipts:read', 'beliefs:retract', 'beliefs:read'],
      });
      const agentId = String((agent as { id: string }).id);
      /** A fan-out-4 tree of n beliefs under one root, plus one lone grounded belief (the probe), by bulk SQL. */
      const seed = async (tag: string): Promise<{ root: number; probe: number }> => {
        const q = await db.owner(store);
        try {
          versions ??= (
            await q.query<{ server: string; vector: string | null }>(
              `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector`,
            )
          )[0]!;
          const [m] = await q.query<{ b: string; j: string }>(
            `SELECT coalesce((SELECT max(id) FROM beliefs), 0)::text AS b, coalesce((SELECT max(id) FROM justifications), 0)::text AS j`,
          );
          const B = Number(m!.b) + 1;
          const J = Number(m!.j) + 1;
          const key = `'fanout/${tag}/' || i`;
          const vec = `array_fill((1 / sqrt(512))::real, ARRAY[512])::vector(512)`;
          await q.query(`INSERT INTO claims (fleet_id, key) SELECT '${FLEET}', ${key} FROM generate_series(0, ${n}) i`);
          await q.query(`INSERT INTO beliefs (id, fleet_id, claim_key, statement, author_id, grounded, embedding) OVERRIDING SYSTEM VALUE
            SELECT ${B} + i, '${FLEET}', ${key}, 'fan-out belief ' || i, ${agentId}, i = 0 OR i = ${n}, ${vec} FROM generate_series(0, ${n}) i`);
          await q.query(`INSERT INTO justifications (id, fleet_id, belief_id, created_by) OVERRIDING SYSTEM VALUE
            SELECT ${J} + i, '${FLEET}', ${B} + i, ${agentId} FROM generate_series(1, ${n - 1}) i`);
          await q.query(`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
            SELECT ${J} + i, ${B} + (i - 1) / 4, '${FLEET}' FROM generate_series(1, ${n - 1}) i`);
          await q.query(
            `INSERT INTO events (fleet_id, type, ids, actor_id) SELECT '${FLEET}', 'BeliefAsserted', array_agg(${B} + i ORDER BY i), ${agentId} FROM generate_series(0, ${n}) i`,
          );
          await q.query(`SELECT setval(pg_get_serial_sequence('beliefs', 'id'), (SELECT max(id) FROM beliefs))`);
          await q.query(
            `SELECT setval(pg_get_serial_sequence('justifications', 'id'), (SELECT max(id) FROM justifications))`,
          );
          return { root: B, probe: B + n };
        } finally {
          await q.close();
        }
      };
      const trees: Record<string, { root: number; probe: number }> = {};
      await time('seed trees (bulk SQL)', async () => {
        for (const g of arms) trees[g] = await seed(g.toLowerCase());
      });
      const app = await createApp({
        // One token stands for every subscriber here, so its subscription cap is raised to their number.
        config: {
          port: 0,
          host: '127.0.0.1',
          bootstrapToken: TOKEN,
          logLevel: 'silent',
          limits: { subscriptionsPerToken: Math.max(subscribers, 100) },
        },
        store,
        embedder: new LocalEmbedder(),
        logger: pino({ level: 'silent' }),
      });
      try {
        await app.listen();
        const base = app.url();
        const xacts = async () => {
          if (opts.engine !== 'postgres') return null;
          const oq = await db.owner(store);
          try {
            const [x] = await oq.query<{ n: string }>(
              `SELECT pg_stat_force_next_flush(), (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database())::text AS n`,
            );
            return Number(x!.n);
          } finally {
            await oq.close();
          }
        };
        for (const g of arms as Granularity[]) {
          const after = encodeCursor(await readTx(store, FLEET, (tx) => headCursor(tx, FLEET)));
          const x0 = await xacts();
          opts.log(`fanout: ${subscribers} subscribers, granularity ${g}, cascade of ${fmtCount(n)} on ${opts.engine}`);
          // The server's own commit times (src/store/tx.ts emits 'commit' as COMMIT returns), on the same
          // epoch clock as the child's; the measured retraction's is the one write committed between the
          // request being sent and the first subscriber's receipt (subscribers only read).
          const commits: number[] = [];
          const serverCpu: { start: NodeJS.CpuUsage | null; ms: number | null } = { start: null, ms: null };
          const onCommit = () => commits.push(now());
          store.commits.on('commit', onCommit);
          const r = await time(`subscribe, probe, measured retraction (child, ${g})`, () =>
            inChild<ChildInput, ChildOutput>(
              SELF,
              {
                http: `${base}/graphql`,
                ws: `${base.replace(/^http/, 'ws')}/graphql`,
                token,
                subscribers,
                granularity: g,
                probe: gid('Belief', trees[g]!.probe),
                root: gid('Belief', trees[g]!.root),
                after,
                timeoutMs: Number(opts.flags['timeout-ms'] ?? 120_000),
              },
              {
                timeoutMs: 10 * 60_000,
                // The server's CPU over the same window as the subscribers' (IPC adds well under a millisecond).
                onProgress: (p) => {
                  if (p === 'measure-start') serverCpu.start = process.cpuUsage();
                  if (p === 'measure-end' && serverCpu.start) {
                    const u = process.cpuUsage(serverCpu.start);
                    serverCpu.ms = (u.user + u.system) / 1000;
                  }
                },
              },
            ),
          ).finally(() => store.commits.off('commit', onCommit));
          await new Promise((res) => setTimeout(res, 1500));
          const x1 = await xacts();
          const o = r.output;
          const rid = atobId(o.retractionId);
          const [ev] = await store.db
            .selectFrom('events')
            .select(['at'])
            .where('type', '=', 'RetractionCommitted')
            .where('retraction_id', '=', rid)
            .execute();
          const [rt] = await store.db
            .selectFrom('events')
            .select(['at'])
            .where('type', '=', 'RetractionStarted')
            .where('retraction_id', '=', rid)
            .execute();
          const at = (x: { at: unknown }) => new Date(x.at as string).getTime();
          // Between the probe's RetractionCommitted and the cascade's: RetractionStarted, the cascade's n beliefs, RetractionCommitted — no loss, no duplicate.
          const perSub = g === 'BELIEF' ? n + 2 : null;
          const wrong = o.received.filter(
            (x) => x.beliefRetracted !== n || (perSub !== null && x.events !== perSub),
          ).length;
          if (wrong > 0)
            throw new Error(
              `${g}: ${wrong} subscribers did not receive exactly ${n} retracted beliefs${perSub ? ` in ${perSub} events` : ''} (got ${[...new Set(o.received.map((x) => `${x.beliefRetracted}/${x.events}`))].join(', ')})`,
            );
          const firstAt = Math.min(...o.received.map((x) => x.at));
          const measured = commits.filter((c) => c >= o.sentAt && c <= firstAt);
          if (measured.length !== 1)
            throw new Error(
              `${g}: expected the measured retraction to be the one commit between its request and the first receipt, saw ${measured.length}`,
            );
          const commitAt = measured[0]!;
          results.push({
            serverCpuMs: serverCpu.ms,
            fromCommit: o.received.map((x) => x.at - commitAt).sort((a, b) => a - b),
            granularity: g,
            output: o,
            eventRowAt: ev ? new Date(at(ev)).toISOString() : '',
            cascadeMs: ev && rt ? at(ev) - at(rt) : null,
            tailReads: x0 !== null && x1 !== null ? x1 - x0 : null,
            fromResponse: o.received.map((x) => x.at - o.respondedAt).sort((a, b) => a - b),
            fromEventAt: o.received.map((x) => x.at - Date.parse(x.eventAt)).sort((a, b) => a - b),
            fromSend: o.received.map((x) => x.at - o.sentAt).sort((a, b) => a - b),
            fromFirst: o.received.map((x) => x.at - firstAt).sort((a, b) => a - b),
            messages: o.received.reduce((sum, x) => sum + x.events, 0),
          });
        }
      } finally {
        await app.close();
      }
      const v = await time('check invariants', () => checkInvariants(store));
      if (v.length > 0)
        throw new Error(`invariants violated after the fan-out run: ${JSON.stringify(v).slice(0, 2000)}`);
    } finally {
      await store.close();
    }
  } finally {
    if (opts.flags.keep !== true) await time('drop database', () => db.drop());
  }

  const targets: Target[] = results.map((a) => {
    const p99 = pct(a.fromCommit, 99);
    const what = `${a.granularity}: ${subscribers} subscribers, ${fmtCount(n)} cascade, ${fmtCount(a.messages / subscribers)} messages each`;
    return {
      label: `p99 ${what}, the server's COMMIT → RetractionCommitted received`,
      figure: fmtMs(p99),
      limit: '250 ms',
      ratio: `${(p99 / 250).toFixed(2)}×`,
      target: '≤ 250 ms',
      met: p99 <= 250,
    };
  });
  const row = (label: string, xs: number[]): Cell[] => [
    label,
    fmtMs(xs[0]!),
    fmtMs(pct(xs, 50)),
    fmtMs(pct(xs, 99)),
    fmtMs(xs[xs.length - 1]!),
  ];
  const loads = results
    .map((a) => `${a.granularity} ${a.output.loadavg.map((x) => x.toFixed(1)).join(' ')}`)
    .join('; ');
  caveats.push(
    `one token shared by all ${subscribers} subscribers (agent 'fanout', scopes receipts:read, beliefs:retract, beliefs:read), one WebSocket connection each; the subscription selects __typename and at (and count on BeliefsRetracted)`,
    "subscribers and the HTTP client run in ONE child process (their parsing is not on the server's event loop, but 200 subscribers share one core); times are that process's clock (performance.timeOrigin + now)",
    "from COMMIT: the server process records the moment COMMIT returns (store.commits, src/store/tx.ts) on the epoch clock both processes share (performance.timeOrigin + now); the targets use it. The other rows bound it: the event row's at and the request sent come before the commit, the HTTP response and the first receipt after it",
    `the event row's \`at\` is its transaction's now() — the START of the retraction's transaction, so "from at" includes the cascade's own time (RetractionStarted → RetractionCommitted \`at\` differ by ${results.map((a) => `${a.cascadeMs} ms`).join(', ')}: same transaction, so 0 expected)`,
    `BELIEF: each subscriber receives ${n} BeliefRetracted + RetractionStarted + RetractionCommitted (${fmtCount(subscribers * (n + 2))} messages in all); LEVEL: one BeliefsRetracted per level (≤ 500 beliefs each), checked to add up to ${n}`,
    'each arm retracts its own tree; every subscriber starts after the same cursor (the log head before its probe); a probe retraction first, until every subscriber has seen it (so each is live), then 500 ms idle',
    `load average at the end of each arm (${os.cpus().length} CPUs): ${loads}`,
  );
  const chart = lineChart({
    title: `fanout on ${opts.engine}: ${subscribers} subscribers, ${fmtCount(n)} cascade — delivery CDF`,
    xLabel: "ms after the event row's at",
    yLabel: 'subscribers with RetractionCommitted',
    series: results.map((a, i) => ({
      name: a.granularity,
      points: a.fromEventAt.map((x, k) => [x, k + 1] as [number, number]),
      dashed: i > 0,
    })),
  });
  return {
    targets,
    table: {
      columns: ['granularity', 'messages', 'RetractionCommitted received, measured from', 'min', 'p50', 'p99', 'max'],
      rows: results.flatMap((a) => [
        [a.granularity, fmtCount(a.messages), ...row("the server's COMMIT of the retraction", a.fromCommit)],
        [a.granularity, fmtCount(a.messages), ...row('retractBelief HTTP response arrived', a.fromResponse)],
        [a.granularity, fmtCount(a.messages), ...row('retractBelief request sent', a.fromSend)],
        [a.granularity, fmtCount(a.messages), ...row("event row's at (transaction start)", a.fromEventAt)],
        [a.granularity, fmtCount(a.messages), ...row("the first subscriber's receipt", a.fromFirst)],
      ]),
      notes: results.map(
        (a) =>
          `${a.granularity}: CPU from the request to the last RetractionCommitted: server ${a.serverCpuMs === null ? 'n/a' : fmtMs(a.serverCpuMs)}, subscribers' process ${fmtMs(a.output.cpuMs)} (${((a.output.cpuMs * 1000) / a.messages).toFixed(1)} µs a message, ${a.serverCpuMs === null ? 'n/a' : ((a.serverCpuMs * 1000) / a.messages).toFixed(1)} µs on the server); retractBelief HTTP round trip ${fmtMs(a.output.respondedAt - a.output.sentAt)}; ${subscribers} connections acknowledged in ${fmtMs(a.output.connectMs)}; probe seen by all in ${fmtMs(a.output.probeMs)}; RetractionCommitted row at ${a.eventRowAt}; database transactions during the arm (pg_stat_database, all sessions): ${a.tailReads ?? 'n/a'}`,
      ),
    },
    data: { n, subscribers, arms: results },
    charts: [{ name: `fanout-${opts.engine}-delivery`, svg: chart }],
    phases,
    caveats,
    engineVersions: versions,
  };
}

/** The database id of a Retraction global id. */
function atobId(g: string): string {
  const s = Buffer.from(g, 'base64').toString('utf8');
  return s.slice(s.indexOf(':') + 1);
}

export const bench: Bench = {
  name: 'fanout',
  description:
    '200 graphql-ws subscribers on one server; a 1k-belief cascade retracted through the API; time to each subscriber receiving RetractionCommitted, per-belief and per-level granularity (--granularity BELIEF,LEVEL)',
  run,
};
