import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import pino from 'pino';
import WebSocket from 'ws';
import { createAgentDirect } from '../../src/agent/agent.service';
import { gid } from '../../src/api/ids';
import { LocalEmbedder } from '../../src/embedding/local';
import { checkInvariants } from '../../src/invariants/check';
import { createApp } from '../../src/server/app';
import { encodeCursor, headCursor } from '../../src/event/event.repository';
import { readTx } from '../../src/store/tx';
import type { Bench, BenchOptions, BenchResult, Cell, Target } from './lib/bench';
import { inChild } from './lib/child';
import { fmtCount, fmtMs } from './lib/report';
import { freshDb } from './lib/stores';
import { lineChart } from './lib/svg';

/**
 * The fan-out benchmark: S graphql-ws subscribers (real `graphql-ws` clients over the `ws`
 * package, 127.0.0.1, in a child process so their work does not run on the server's event loop)
 * on one server; a cascade of N beliefs (a fan-out-4 tree seeded by bulk SQL) is retracted through
 * the API (retractBelief over HTTP, from the same child). Measured per subscriber: the time from
 * the moment retractBelief's HTTP response arrives to the moment that subscriber receives
 * RetractionCommitted, and from the event row's `at` to that moment.
 */

const FLEET = 'bench';
const SELF = fileURLToPath(import.meta.url);
const TOKEN = 'bench-bootstrap-token-0123456789';
const SUBSCRIPTION = `subscription($after: String) { retractionEvents(after: $after) { __typename at } }`;

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
}

const now = () => performance.timeOrigin + performance.now();

async function gql(url: string, token: string, query: string, variables: Record<string, unknown>) {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) });
  const j = (await r.json()) as { data?: any; errors?: unknown[] };
  if (!r.ok || j.errors?.length) throw new Error(`HTTP ${r.status}: ${JSON.stringify(j).slice(0, 500)}`);
  return j.data;
}

const RETRACT = 'mutation($b: ID!, $r: String!) { retractBelief(input: { beliefId: $b, reason: $r }) { id } }';

/** Child-process entry (lib/child.ts): subscribers, the probe, the measured retraction. */
export async function work(t: ChildInput): Promise<ChildOutput> {
  const clients: Client[] = [];
  const state = Array.from({ length: t.subscribers }, () => ({ committed: 0, events: 0, beliefRetracted: 0, at: 0, eventAt: '', error: null as unknown }));
  const waiters = new Set<() => void>();
  const poke = () => { for (const w of waiters) w(); };
  const until = (pred: () => boolean, what: string) =>
    new Promise<void>((resolve, reject) => {
      if (pred()) return resolve();
      const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`timed out waiting for ${what}`)); }, t.timeoutMs);
      const check = () => { if (pred()) { clearTimeout(timer); waiters.delete(check); resolve(); } };
      waiters.add(check);
    });
  const c0 = now();
  try {
    let acked = 0;
    for (let i = 0; i < t.subscribers; i++) {
      const s = state[i]!;
      const client = createClient({
        url: t.ws, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${t.token}` }, retryAttempts: 0, lazy: false,
        on: { connected: () => { acked++; poke(); } },
      });
      clients.push(client);
      client.subscribe<{ retractionEvents: { __typename: string; at: string } }>({ query: SUBSCRIPTION, variables: { after: t.after } }, {
        next: (m) => {
          const e = m.data?.retractionEvents;
          if (!e) { s.error = m.errors ?? m; poke(); return; }
          if (s.committed === 1) {
            s.events++;
            if (e.__typename === 'BeliefRetracted') s.beliefRetracted++;
          }
          if (e.__typename === 'RetractionCommitted') {
            s.committed++;
            if (s.committed === 2) { s.at = now(); s.eventAt = e.at; }
            poke();
          }
        },
        error: (e) => { s.error = e; poke(); },
        complete: () => {},
      });
    }
    await until(() => acked === t.subscribers, 'every connection acknowledged');
    const connectMs = now() - c0;
    // A probe retraction until every subscriber has seen one: then all are live ("from now" was taken).
    const p0 = now();
    await gql(t.http, t.token, RETRACT, { b: t.probe, r: 'probe' });
    await until(() => state.every((s) => s.committed >= 1) || state.some((s) => s.error), 'every subscriber to see the probe');
    const bad = state.find((s) => s.error);
    if (bad) throw new Error(`a subscriber failed: ${JSON.stringify(bad.error).slice(0, 500)}`);
    const probeMs = now() - p0;
    await new Promise((r) => setTimeout(r, 500));
    const sentAt = now();
    const d = await gql(t.http, t.token, RETRACT, { b: t.root, r: 'benchmark: the root turned out false' });
    const respondedAt = now();
    await until(() => state.every((s) => s.committed >= 2) || state.some((s) => s.error), 'every subscriber to see RetractionCommitted');
    const bad2 = state.find((s) => s.error);
    if (bad2) throw new Error(`a subscriber failed: ${JSON.stringify(bad2.error).slice(0, 500)}`);
    return {
      sentAt, respondedAt, retractionId: d.retractBelief.id as string,
      received: state.map((s) => ({ at: s.at, eventAt: s.eventAt, events: s.events, beliefRetracted: s.beliefRetracted })),
      connectMs, probeMs, loadavg: os.loadavg(),
    };
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
  }
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function run(opts: BenchOptions): Promise<BenchResult> {
  const n = opts.size ?? 1000;
  const subscribers = Number(opts.flags.subscribers ?? 200);
  const phases: Record<string, number> = {};
  const caveats: string[] = [];
  const time = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      phases[label] = Math.round((phases[label] ?? 0) + performance.now() - t0);
    }
  };
  const db = await time('create database', () => freshDb(opts.engine, opts.serverUrl, 'retract_bench_fanout'));
  let versions: BenchResult['engineVersions'] = null;
  let out: ChildOutput;
  let eventRowAt: string;
  let cascadeMs: number | null = null;
  let tailReads: number | null = null;
  try {
    const store = await db.open(Number(opts.flags['server-pool'] ?? 10));
    try {
      const { token, agent } = await createAgentDirect(store, { fleet: FLEET, name: 'fanout', scopes: ['receipts:read', 'beliefs:retract', 'beliefs:read'] });
      const agentId = String((agent as { id: string }).id);
      const q = await db.owner();
      let root = 0;
      let probe = 0;
      try {
        [versions] = await q.query<{ server: string; vector: string | null }>(
          `SELECT current_setting('server_version') AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector`,
        );
        await time('seed tree (bulk SQL)', async () => {
          const [m] = await q.query<{ b: string; j: string }>(`SELECT coalesce((SELECT max(id) FROM beliefs), 0)::text AS b, coalesce((SELECT max(id) FROM justifications), 0)::text AS j`);
          const B = Number(m!.b) + 1;
          const J = Number(m!.j) + 1;
          const vec = `array_fill((1 / sqrt(512))::real, ARRAY[512])::vector(512)`;
          await q.query(`INSERT INTO claims (fleet_id, key) SELECT '${FLEET}', 'fanout/' || i FROM generate_series(0, ${n}) i`);
          await q.query(`INSERT INTO beliefs (id, fleet_id, claim_key, statement, author_id, grounded, embedding) OVERRIDING SYSTEM VALUE
            SELECT ${B} + i, '${FLEET}', 'fanout/' || i, 'fan-out belief ' || i, ${agentId}, i = 0 OR i = ${n}, ${vec} FROM generate_series(0, ${n}) i`);
          await q.query(`INSERT INTO justifications (id, fleet_id, belief_id, created_by) OVERRIDING SYSTEM VALUE
            SELECT ${J} + i, '${FLEET}', ${B} + i, ${agentId} FROM generate_series(1, ${n - 1}) i`);
          await q.query(`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
            SELECT ${J} + i, ${B} + (i - 1) / 4, '${FLEET}' FROM generate_series(1, ${n - 1}) i`);
          await q.query(`INSERT INTO events (fleet_id, type, ids, actor_id) SELECT '${FLEET}', 'BeliefAsserted', array_agg(${B} + i ORDER BY i), ${agentId} FROM generate_series(0, ${n}) i`);
          await q.query(`SELECT setval(pg_get_serial_sequence('beliefs', 'id'), (SELECT max(id) FROM beliefs))`);
          await q.query(`SELECT setval(pg_get_serial_sequence('justifications', 'id'), (SELECT max(id) FROM justifications))`);
          root = B;
          probe = B + n;
        });
      } finally {
        await q.close();
      }
      const app = await createApp({
        config: { port: 0, host: '127.0.0.1', bootstrapToken: TOKEN, logLevel: 'silent' },
        store, embedder: new LocalEmbedder(), logger: pino({ level: 'silent' }),
      });
      try {
        await app.listen();
        const base = app.url();
        const after = encodeCursor(await readTx(store, FLEET, (tx) => headCursor(tx)));
        const xacts = async () => {
          if (opts.engine !== 'postgres') return null;
          const oq = await db.owner();
          try {
            const [x] = await oq.query<{ n: string }>(`SELECT pg_stat_force_next_flush(), (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database())::text AS n`);
            return Number(x!.n);
          } finally {
            await oq.close();
          }
        };
        const x0 = await xacts();
        opts.log(`fanout: ${subscribers} subscribers, cascade of ${fmtCount(n)} on ${opts.engine}`);
        const r = await time('subscribe, probe, measured retraction (child)', () =>
          inChild<ChildInput, ChildOutput>(SELF, {
            http: `${base}/graphql`, ws: `${base.replace(/^http/, 'ws')}/graphql`, token, subscribers,
            probe: gid('Belief', probe), root: gid('Belief', root), after, timeoutMs: Number(opts.flags['timeout-ms'] ?? 120_000),
          }, { timeoutMs: 10 * 60_000 }));
        out = r.output;
        await new Promise((res) => setTimeout(res, 1500));
        const x1 = await xacts();
        tailReads = x0 !== null && x1 !== null ? x1 - x0 : null;
      } finally {
        await app.close();
      }
      const [ev] = (await store.db.selectFrom('events').select(['at']).where('type', '=', 'RetractionCommitted').where('retraction_id', '=', atobId(out!.retractionId)).execute());
      eventRowAt = ev ? new Date(ev.at as unknown as string).toISOString() : '';
      const [rt] = await store.db.selectFrom('events').select(['at']).where('type', '=', 'RetractionStarted').where('retraction_id', '=', atobId(out!.retractionId)).execute();
      if (ev && rt) cascadeMs = new Date(ev.at as unknown as string).getTime() - new Date(rt.at as unknown as string).getTime();
      const v = await time('check invariants', () => checkInvariants(store));
      if (v.length > 0) throw new Error(`invariants violated after the fan-out run: ${JSON.stringify(v).slice(0, 2000)}`);
    } finally {
      await store.close();
    }
  } finally {
    if (opts.flags.keep !== true) await time('drop database', () => db.drop());
  }
  const o = out!;
  const fromResponse = o.received.map((x) => x.at - o.respondedAt).sort((a, b) => a - b);
  const fromEventAt = o.received.map((x) => x.at - Date.parse(x.eventAt)).sort((a, b) => a - b);
  const fromSend = o.received.map((x) => x.at - o.sentAt).sort((a, b) => a - b);
  // Between the probe's RetractionCommitted and the cascade's: RetractionStarted, n BeliefRetracted, RetractionCommitted — no loss, no duplicate.
  const wrongCounts = o.received.filter((x) => x.beliefRetracted !== n || x.events !== n + 2).length;
  if (wrongCounts > 0) throw new Error(`${wrongCounts} subscribers did not receive exactly ${n} BeliefRetracted events and ${n + 2} events in all (got ${[...new Set(o.received.map((x) => `${x.beliefRetracted}/${x.events}`))].join(', ')})`);
  const firstAt = Math.min(...o.received.map((x) => x.at));
  const fromFirst = o.received.map((x) => x.at - firstAt).sort((a, b) => a - b);
  const p99 = pct(fromResponse, 99);
  const p99At = pct(fromEventAt, 99);
  const p99First = pct(fromFirst, 99);
  const targets: Target[] = [
    { label: `p99 over ${subscribers} subscribers, event row's at → RetractionCommitted received (${fmtCount(n)} cascade; at is the transaction's start, an upper bound)`, figure: fmtMs(p99At), limit: '250 ms', ratio: `${(p99At / 250).toFixed(2)}×`, target: '≤ 250 ms', met: p99At <= 250 },
    { label: 'p99 from the first subscriber\'s receipt (a lower bound: the commit came before it)', figure: fmtMs(p99First), limit: '250 ms', ratio: `${(p99First / 250).toFixed(2)}×`, target: '≤ 250 ms', met: p99First <= 250 },
    { label: `p99 from the retractBelief HTTP response (it arrived ${fmtMs(o.respondedAt - o.sentAt)} after the request)`, figure: fmtMs(p99), limit: '250 ms', ratio: `${(p99 / 250).toFixed(2)}×`, target: '≤ 250 ms', met: p99 <= 250 },
  ];
  const row = (label: string, xs: number[]): Cell[] => [label, fmtMs(xs[0]!), fmtMs(pct(xs, 50)), fmtMs(pct(xs, 99)), fmtMs(xs[xs.length - 1]!)];
  caveats.push(
    `one token shared by all ${subscribers} subscribers (agent 'fanout', scopes receipts:read, beliefs:retract, beliefs:read), one WebSocket connection each; subscription selects __typename and at`,
    'subscribers and the HTTP client run in ONE child process (their parsing is not on the server\'s event loop); times are that process\'s clock (performance.timeOrigin + now)',
    `the event row's \`at\` is its transaction's now() — the START of the retraction's transaction, so "from at" includes the cascade's own time${cascadeMs !== null ? ` (RetractionStarted → RetractionCommitted \`at\` differ by ${cascadeMs} ms, same transaction, so 0 expected)` : ''}`,
    `each subscriber receives ${n} BeliefRetracted + RetractionStarted + RetractionCommitted (${fmtCount(subscribers * (n + 2))} messages in all)`,
    'every subscriber starts after the same cursor (the log head before the probe); a probe retraction first, until every subscriber has seen it (so each is live), then 500 ms idle',
    `machine heavily loaded by other work: load average at the end ${o.loadavg.map((x) => x.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`,
  );
  const chart = lineChart({
    title: `fanout on ${opts.engine}: ${subscribers} subscribers, ${fmtCount(n)} cascade — delivery CDF`,
    xLabel: 'ms after the retractBelief response', yLabel: 'subscribers with RetractionCommitted',
    series: [
      { name: 'after HTTP response', points: fromResponse.map((x, i) => [x, i + 1] as [number, number]) },
      { name: 'after event at', points: fromEventAt.map((x, i) => [x, i + 1] as [number, number]), dashed: true },
    ],
  });
  return {
    targets,
    table: {
      columns: ['RetractionCommitted received, measured from', 'min', 'p50', 'p99', 'max'],
      rows: [row('retractBelief HTTP response arrived', fromResponse), row('retractBelief request sent', fromSend), row("event row's at (transaction start)", fromEventAt), row("the first subscriber's receipt", fromFirst)],
      notes: [
        `retractBelief HTTP round trip ${fmtMs(o.respondedAt - o.sentAt)}; ${subscribers} connections acknowledged in ${fmtMs(o.connectMs)}; probe seen by all in ${fmtMs(o.probeMs)}; RetractionCommitted row at ${eventRowAt!}`,
        `database transactions during subscribe + probe + measured retraction (pg_stat_database, all sessions of this database): ${tailReads ?? 'n/a'}`,
      ],
    },
    data: { n, subscribers, output: o, eventRowAt: eventRowAt!, cascadeMs, fromResponse, fromEventAt, fromSend, fromFirst, tailReads },
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
  description: '200 graphql-ws subscribers on one server; a 1k-belief cascade retracted through the API; time to each subscriber receiving RetractionCommitted',
  run,
};
