import http from 'node:http';
import pino from 'pino';
import { createAgentDirect } from '../../src/agent/agent.service';
import { LocalEmbedder } from '../../src/embedding/local';
import { checkInvariants } from '../../src/invariants/check';
import { type App, createApp } from '../../src/server/app';
import type { Store } from '../../src/store/engine';
import type { Bench, BenchOptions, BenchResult, Cell } from './lib/bench';
import { fmtMs } from './lib/report';
import { ARM_COLUMNS, armCells, roundsFlags } from './lib/rounds';
import { profiler } from './lib/profile';
import { freshDb } from './lib/stores';
import { type ArmResult, TOKEN, childArm } from './turns';

/**
 * The cost of GET /metrics on the turns benchmark (issue 34, item 7): the GraphQL arm of `turns` (assertBelief over
 * HTTP, clients in a child process) against two servers on the same database, one with metrics off
 * (RETRACT_METRICS=off: no Yoga plugin, no registry) and one with them on and scraped every second while it runs
 * (a real Prometheus scrapes every 15 s or so; every second is the harsher case). The arms alternate, off then on,
 * `--rounds` times (default 2), so drift of the machine falls on both. Target: metrics on ≥ 97 % of off's commits/s.
 *
 * Beside commits/s it prints the server's CPU per commit for each arm (this process, the scraper included), which a
 * loaded or drifting machine moves far less than throughput; `--cpu-profile DIR` writes a V8 profile of each arm's
 * timed window (read them with `npx tsx experiments/cpu_profile_summary.ts DIR`).
 *
 * `npm run bench -- metrics [--engine postgres] [--seconds 10] [--clients 8] [--rounds 2] [--cpu-profile DIR]`
 */

const WORKLOAD = 'distinct';
const cpuText = (ms: number | null) => (ms === null ? '–' : `${ms.toFixed(3)} ms`);

async function serverWith(store: Store, metrics: boolean): Promise<App> {
  const app = await createApp({
    config: { port: 0, host: '127.0.0.1', bootstrapToken: TOKEN, logLevel: 'silent' },
    store,
    embedder: new LocalEmbedder(),
    logger: pino({ level: 'silent' }),
    metrics: { enabled: metrics, token: null },
  });
  await app.listen();
  return app;
}

/** One GET /metrics, resolved when its body has been read; whether it answered 200. */
function scrapeOnce(base: string): Promise<boolean> {
  return new Promise((resolve) => {
    http
      .get(`${base}/metrics`, (res) => res.resume().on('end', () => resolve(res.statusCode === 200)))
      .on('error', () => resolve(false));
  });
}

/**
 * What one scrape costs this process when nothing else runs: `n` scrapes one after another, CPU (user + system, the
 * scraping client's share included, so an upper bound) and wall time per scrape. Unlike the arms' commits/s, this
 * hardly moves with the machine's load.
 */
async function idleScrapeCost(base: string, n: number): Promise<{ cpuMs: number; wallMs: number }> {
  for (let i = 0; i < 3; i++) await scrapeOnce(base);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) if (!(await scrapeOnce(base))) throw new Error('GET /metrics did not answer 200');
  const c = process.cpuUsage(c0);
  return { cpuMs: (c.user + c.system) / 1000 / n, wallMs: (performance.now() - t0) / n };
}

/** GET /metrics once a second until stopped; how many scrapes answered 200. */
function scrapeEverySecond(base: string): { stop(): Promise<number> } {
  let ok = 0;
  let inflight: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    inflight = new Promise<void>((resolve) => {
      http
        .get(`${base}/metrics`, (res) => {
          if (res.statusCode === 200) ok++;
          res.resume().on('end', resolve);
        })
        .on('error', () => resolve());
    });
  }, 1000);
  return {
    async stop() {
      clearInterval(timer);
      await inflight;
      return ok;
    },
  };
}

async function run(opts: BenchOptions): Promise<BenchResult> {
  const { seconds, clients, rounds } = roundsFlags(opts);
  const db = await freshDb(opts.engine, opts.serverUrl, 'retract_bench_metrics');
  const results: Array<{ metrics: 'off' | 'on'; round: number; scrapes: number; r: ArmResult }> = [];
  const prof = profiler(opts.flags['cpu-profile']);
  let scrape = { cpuMs: 0, wallMs: 0 };
  try {
    const store = await db.open(Number(opts.flags['server-pool'] ?? 10));
    const off = await serverWith(store, false);
    const on = await serverWith(store, true);
    try {
      const { token } = await createAgentDirect(store, {
        fleet: 'bench-metrics',
        name: 'turns',
        scopes: ['beliefs:write', 'beliefs:read'],
      });
      const databaseUrl = db.location.engine === 'postgres' ? db.location.databaseUrl : '';
      for (let round = 1; round <= rounds; round++) {
        for (const [metrics, app] of [
          ['off', off],
          ['on', on],
        ] as const) {
          const tag = `metrics-${metrics}-${round}`;
          opts.log(`metrics: ${metrics}, round ${round}: ${clients} clients for ${seconds} s`);
          const scraper = metrics === 'on' ? scrapeEverySecond(app.url()) : null;
          await prof.start();
          const r = await childArm(store, {
            arm: 'graphql',
            workload: WORKLOAD,
            clients,
            seconds,
            tag,
            url: `${app.url()}/graphql`,
            token,
            databaseUrl,
            agentId: '',
          });
          const profile = await prof.stop(tag);
          const scrapes = (await scraper?.stop()) ?? 0;
          if (profile) opts.log(`  profile: ${profile}`);
          results.push({ metrics, round, scrapes, r });
          opts.log(
            `  ${r.commits} commits, ${r.perSecond.toFixed(1)}/s, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, errors ${r.errors}, scrapes ${scrapes}, server CPU ${cpuText(r.cpuPerCommit.server)}/commit`,
          );
        }
      }
      scrape = await idleScrapeCost(on.url(), 50);
      opts.log(`one scrape, idle: ${scrape.cpuMs.toFixed(2)} ms CPU, ${scrape.wallMs.toFixed(2)} ms wall (50 scrapes)`);
    } finally {
      await on.close();
      await off.close();
    }
    const v = await checkInvariants(store);
    await store.close();
    if (v.length > 0)
      throw new Error(`invariants violated after the metrics runs: ${JSON.stringify(v).slice(0, 2000)}`);
  } finally {
    if (opts.flags.keep !== true) await db.drop();
  }
  const rate = (m: 'off' | 'on') => {
    const rs = results.filter((x) => x.metrics === m);
    return rs.reduce((n, x) => n + x.r.commits, 0) / rs.reduce((n, x) => n + x.r.seconds, 0);
  };
  /** Server CPU per commit over an arm's rounds (ms), weighted by commits. */
  const cpu = (m: 'off' | 'on') => {
    const rs = results.filter((x) => x.metrics === m && x.r.cpuPerCommit.server !== null);
    const commits = rs.reduce((n, x) => n + x.r.commits, 0);
    return commits ? rs.reduce((n, x) => n + x.r.cpuPerCommit.server! * x.r.commits, 0) / commits : null;
  };
  const ratio = rate('on') / rate('off');
  // Each round's on/off ratio, and how far the off arm alone moved between rounds: when that spread is wider than the
  // 3 % under judgement, one run's pooled ratio is within the machine's drift and says so.
  const perRound = results
    .filter((x) => x.metrics === 'on')
    .map((x) => x.r.perSecond / results.find((y) => y.metrics === 'off' && y.round === x.round)!.r.perSecond);
  const offRates = results.filter((x) => x.metrics === 'off').map((x) => x.r.perSecond);
  const offSpread = offRates.length > 1 ? (Math.max(...offRates) - Math.min(...offRates)) / Math.min(...offRates) : 0;
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const cpuOff = cpu('off');
  const cpuOn = cpu('on');
  const rows: Cell[][] = results.map(({ metrics, round, scrapes, r }) => [
    metrics,
    round,
    ...armCells(r),
    scrapes,
    cpuText(r.cpuPerCommit.server),
  ]);
  return {
    targets: [
      {
        label: `GraphQL assertBelief commits/s with GET /metrics on (scraped every 1 s) vs off, ${clients} clients, ${rounds} rounds of ${seconds} s each`,
        figure: `${rate('on').toFixed(1)}/s`,
        limit: `${rate('off').toFixed(1)}/s`,
        ratio: `${(ratio * 100).toFixed(1)} %`,
        target: '≥ 97 % (≤ 3 % fewer)',
        met: ratio >= 0.97,
      },
    ],
    table: {
      columns: ['metrics', 'round', ...ARM_COLUMNS, 'scrapes', 'server CPU/commit'],
      rows,
      notes: [
        "each row is the turns benchmark's GraphQL arm (workload distinct) against a server with metrics off or on; the figure is all rounds' commits over all rounds' seconds",
        `server CPU per commit, all rounds (this process, the scraper included): off ${cpuText(cpuOff)}, on ${cpuText(cpuOn)}${
          cpuOff !== null && cpuOn !== null
            ? ` (+${(cpuOn - cpuOff).toFixed(3)} ms, ${(((cpuOn - cpuOff) / cpuOff) * 100).toFixed(1)} %)`
            : ''
        }`,
        `on/off by round: ${perRound.map(pct).join(', ')}; the off arm alone moved ${pct(offSpread)} between its fastest and slowest round${
          offSpread > 0.03 ? " (wider than the 3 % judged: the pooled ratio is within this run's drift)" : ''
        }`,
        `one scrape with nothing else running: ${scrape.cpuMs.toFixed(2)} ms of CPU (${pct(scrape.cpuMs / 1000)} of a core at one scrape a second, ${pct(scrape.cpuMs / 15000)} at Prometheus' usual 15 s), ${scrape.wallMs.toFixed(2)} ms wall`,
      ],
    },
    data: {
      results: results.map(({ metrics, round, scrapes, r }) => ({ metrics, round, scrapes, ...r })),
      idleScrape: scrape,
    },
    caveats: [
      'both servers run in this process on one store (one pool); only one is driven at a time',
      `the on arm is scraped every second by this process (${opts.engine}); its database read (retract_metrics_open) runs on the same pool`,
    ],
  };
}

export const bench: Bench = {
  name: 'metrics',
  description:
    "the cost of GET /metrics: the turns benchmark's GraphQL arm against a server with metrics off and one with them on (scraped every second), alternating",
  run,
};
