import http from 'node:http';
import type net from 'node:net';
import pino from 'pino';
import { createAgentDirect } from '../../src/agent/agent.service';
import { LocalEmbedder } from '../../src/embedding/local';
import { checkInvariants } from '../../src/invariants/check';
import { createApp } from '../../src/server/app';
import type { Bench, BenchOptions, BenchResult, Cell } from './lib/bench';
import { fmtMs } from './lib/report';
import { ARM_COLUMNS, armCells, roundsFlags } from './lib/rounds';
import { type Location, freshDb } from './lib/stores';
import { type ArmResult, TOKEN, childArm } from './turns';

/**
 * The cost of tracing on the turns benchmark (issue 34, item 7): the GraphQL arm of `turns` (assertBelief over HTTP,
 * clients in a child process) against the server in three configurations, each started afresh on the same database:
 *
 *  - `none`: no OpenTelemetry variable at all. src/server/use-tracing.ts returns before importing the SDK, so no
 *    span code exists in the process: the server as if tracing were not built in.
 *  - `disabled`: OTEL_EXPORTER_OTLP_ENDPOINT set and OTEL_SDK_DISABLED=true, the documented off switch. The same
 *    code path as `none` (the check happens once, at start); measured so the figure is a measurement, and its gap
 *    to `none` is this run's noise.
 *  - `on`: OTEL_EXPORTER_OTLP_ENDPOINT pointing at a sink in this process that reads each OTLP request, answers 200
 *    and drops the spans: every span is made, batched and serialised as shipped (a span per request, operation,
 *    root field and SQL statement), and nothing downstream slows the server.
 *
 * Metrics are off in every arm (their cost is `npm run bench -- metrics`), so only tracing differs. The arms
 * rotate order every round (`--rounds`, default 2), so the machine's drift falls on each. Target (issue 34):
 * ≤ 1 % fewer commits per second than `none`, for `disabled` and for `on` (the "tracing (on, exporter off)").
 *
 * `npm run bench -- tracing [--engine postgres] [--seconds 10] [--clients 8] [--rounds 2]`
 */

const WORKLOAD = 'distinct';
const ARMS = ['none', 'disabled', 'on'] as const;
type Arm = (typeof ARMS)[number];

/** An OTLP/HTTP receiver that drops what it is sent: requests and bytes counted, nothing parsed. */
async function droppingSink(): Promise<{
  url: string;
  received(): { requests: number; bytes: number };
  close(): Promise<void>;
}> {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (b: Buffer) => (bytes += b.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => ({ requests, bytes }),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** The OpenTelemetry variables of one arm; every other OTEL_* of the caller's environment is hidden meanwhile. */
function otelEnv(arm: Arm, sink: string): Record<string, string> {
  if (arm === 'none') return {};
  return arm === 'disabled'
    ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_SDK_DISABLED: 'true' }
    : { OTEL_EXPORTER_OTLP_ENDPOINT: sink };
}

async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.entries(process.env).filter(([k]) => k.startsWith('OTEL_'));
  for (const [k] of saved) delete process.env[k];
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(vars)) delete process.env[k];
    for (const [k, v] of saved) process.env[k] = v;
  }
}

/** A server as `retract serve` builds it, opening its own store (tracing hooks the store's statements as it opens). */
function serverAt(loc: Location) {
  return createApp({
    config: {
      port: 0,
      host: '127.0.0.1',
      bootstrapToken: TOKEN,
      logLevel: 'silent',
      ...(loc.engine === 'postgres'
        ? { engine: 'postgres' as const, databaseUrl: loc.databaseUrl }
        : { engine: 'pglite' as const, dataDir: loc.dataDir }),
    },
    embedder: new LocalEmbedder(),
    logger: pino({ level: 'silent' }),
    metrics: { enabled: false },
  });
}

async function run(opts: BenchOptions): Promise<BenchResult> {
  const { seconds, clients, rounds } = roundsFlags(opts);
  const db = await freshDb(opts.engine, opts.serverUrl, 'retract_bench_tracing');
  const sink = await droppingSink();
  const results: Array<{ arm: Arm; round: number; exported: { requests: number; bytes: number }; r: ArmResult }> = [];
  try {
    const setup = await db.open(2);
    const { token } = await createAgentDirect(setup, {
      fleet: 'bench-tracing',
      name: 'turns',
      scopes: ['beliefs:write', 'beliefs:read'],
    });
    await setup.close();
    const databaseUrl = db.location.engine === 'postgres' ? db.location.databaseUrl : '';
    for (let round = 1; round <= rounds; round++) {
      const order = ARMS.map((_, i) => ARMS[(i + round - 1) % ARMS.length]!);
      for (const arm of order) {
        opts.log(`tracing: ${arm}, round ${round}: ${clients} clients for ${seconds} s`);
        const before = sink.received();
        const r = await withEnv(otelEnv(arm, sink.url), async () => {
          const app = await serverAt(db.location);
          try {
            await app.listen();
            return await childArm(app.store, {
              arm: 'graphql',
              workload: WORKLOAD,
              clients,
              seconds,
              tag: `tracing-${arm}-${round}`,
              url: `${app.url()}/graphql`,
              token,
              databaseUrl,
              agentId: '',
            });
          } finally {
            // Tracing's shutdown exports what is still batched: counted in this arm's figures below.
            await app.close();
          }
        });
        const after = sink.received();
        const exported = { requests: after.requests - before.requests, bytes: after.bytes - before.bytes };
        // The arms are only what they say when the sink saw spans from `on` and nothing from the others.
        if ((arm === 'on') !== exported.bytes > 0)
          throw new Error(`tracing ${arm}: the sink received ${exported.bytes} bytes in ${exported.requests} requests`);
        results.push({ arm, round, exported, r });
        opts.log(
          `  ${r.commits} commits, ${r.perSecond.toFixed(1)}/s, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, errors ${r.errors}, exported ${exported.bytes} bytes`,
        );
      }
    }
    const store = await db.open(2);
    const v = await checkInvariants(store);
    await store.close();
    if (v.length > 0)
      throw new Error(`invariants violated after the tracing runs: ${JSON.stringify(v).slice(0, 2000)}`);
  } finally {
    await sink.close();
    if (opts.flags.keep !== true) await db.drop();
  }
  const of = (a: Arm) => results.filter((x) => x.arm === a);
  const rate = (a: Arm) => of(a).reduce((n, x) => n + x.r.commits, 0) / of(a).reduce((n, x) => n + x.r.seconds, 0);
  /** Server CPU per commit over the arm's rounds (ms): less sensitive to a loaded machine than commits per second. */
  const cpu = (a: Arm) => {
    const rs = of(a).filter((x) => x.r.cpuPerCommit.server !== null);
    const commits = rs.reduce((n, x) => n + x.r.commits, 0);
    return commits ? rs.reduce((n, x) => n + x.r.cpuPerCommit.server! * x.r.commits, 0) / commits : null;
  };
  const target = (a: Arm, label: string) => {
    const ratio = rate(a) / rate('none');
    return {
      label: `${label}, ${clients} clients, ${rounds} rounds of ${seconds} s each`,
      figure: `${rate(a).toFixed(1)}/s`,
      limit: `${rate('none').toFixed(1)}/s`,
      ratio: `${(ratio * 100).toFixed(1)} %`,
      target: '≥ 99 % (≤ 1 % fewer)',
      met: ratio >= 0.99,
    };
  };
  const cpuNote = ARMS.map((a) => `${a} ${cpu(a)?.toFixed(3) ?? '–'} ms`).join(', ');
  return {
    targets: [
      target(
        'disabled',
        'GraphQL assertBelief commits/s with tracing disabled (endpoint set, OTEL_SDK_DISABLED=true) vs none',
      ),
      target('on', 'with tracing on, exporting to a sink that drops the spans, vs none'),
    ],
    table: {
      columns: ['tracing', 'round', ...ARM_COLUMNS, 'server CPU/commit', 'exported bytes'],
      rows: results.map(({ arm, round, exported, r }): Cell[] => [
        arm,
        round,
        ...armCells(r),
        r.cpuPerCommit.server === null ? null : `${r.cpuPerCommit.server.toFixed(3)} ms`,
        exported.bytes,
      ]),
      notes: [
        "each row is the turns benchmark's GraphQL arm (workload distinct) against a server started for it; the figures are all rounds' commits over all rounds' seconds",
        `server CPU per commit (this process, all rounds): ${cpuNote}`,
      ],
    },
    data: { results: results.map(({ arm, round, exported, r }) => ({ tracing: arm, round, exported, ...r })) },
    caveats: [
      'the sink runs in this process, beside the server: its reading of the OTLP requests is counted in the on arm',
      'the batch span processor runs with its defaults (5 s between exports, a queue of 2048 spans: past that, spans are dropped, as a shipped server would)',
      'metrics are off in every arm; each arm starts its own server and store on the same database, outside the timed window',
    ],
  };
}

export const bench: Bench = {
  name: 'tracing',
  description:
    "the cost of tracing: the turns benchmark's GraphQL arm against a server without OpenTelemetry variables, with tracing switched off, and with it exporting to a sink that drops spans, alternating",
  run,
};
