import fs from 'node:fs';
import pg from 'pg';
import { expect } from 'vitest';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { checkInvariants } from '../../src/invariants/check';
import { openStore, type Store } from '../../src/store/engine';
import { startBuilt, type BuiltServer } from '../support/built-server';
import { committedOrder, rawId, retractOp, runClients, Subscriber, type Recorded, type Shared } from './clients';
import { collect, type Sql } from './collect';
import { check, type Anomaly } from './elle';
import { seedTree } from './seed';

/**
 * One history drill, the same on every engine: concurrent clients over the real GraphQL API of the built server,
 * a large cascade in flight when the engine's fault hits, a few more clients after it, then the history the
 * clients recorded and what the database holds go to the checker (test/history/elle.ts) and checkInvariants: no
 * anomaly, nothing lost, every receipt equal to its rows. What differs per engine (where the store lives, how it
 * is reached offline, which faults it has) is a Target. Sizes come from the environment (`npm run test:faults --
 * --minutes N` repeats the drills for N minutes with larger ones).
 */
const CLIENTS = Number(process.env.RETRACT_HISTORY_CLIENTS ?? 6);
const OPS = Number(process.env.RETRACT_HISTORY_OPS ?? 25);
export const TREE = Number(process.env.RETRACT_HISTORY_TREE ?? 3_000);
export const MINUTES = Number(process.env.RETRACT_FAULTS_MINUTES ?? 0);
const SEED = Number(process.env.RETRACT_HISTORY_SEED ?? Date.now() % 100_000);
const START = Buffer.from('e1:0:0:-1').toString('base64url');
const TOKEN = 'history-operator-token-0123456789';

export interface Totals {
  runs: number;
  operations: number;
  byOutcome: Record<string, number>;
  faults: Record<string, number>;
  cascadesCommitted: number;
  cascadesAbsent: number;
  anomalies: Anomaly[];
  lost: number;
  violations: number;
}

export const newTotals = (): Totals => ({
  runs: 0,
  operations: 0,
  byOutcome: {},
  faults: {},
  cascadesCommitted: 0,
  cascadesAbsent: 0,
  anomalies: [],
  lost: 0,
  violations: 0,
});

/** The built server of a drill, restartable: `kill()` is kill -9 (and waits for the exit). */
export class Server {
  private current: BuiltServer | null = null;
  base = '';
  constructor(private env: () => Record<string, string>) {}
  async start(): Promise<void> {
    this.current = startBuilt({ RETRACT_BOOTSTRAP_TOKEN: TOKEN, ...this.env() });
    this.base = await this.current.url;
  }
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const s = this.current;
    if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return;
    s.child.kill(signal);
    await s.exited;
  }
  /** Why the server is not running, or null while it is. */
  died(): string | null {
    const c = this.current?.child;
    if (!c) return 'never started';
    return c.exitCode !== null || c.signalCode !== null
      ? `exited ${c.exitCode ?? c.signalCode}:\n${this.current!.stderr().slice(-3000)}`
      : null;
  }
}

/** Where a drill's store lives and how it is reached around the server. */
export interface Target {
  engine: 'postgres' | 'citus' | 'pglite';
  server: Server;
  /** Size of the seeded tree under each fault's cascade. */
  tree: number;
  /**
   * Runs `fn` on a SQL session and an open store of the database the server serves. A server engine runs it beside
   * the server; PGlite (one process at a time on a data directory) stops the server, opens the directory here, and
   * starts the server again after.
   */
  offline<T>(fn: (sql: Sql, store: Store) => Promise<T>): Promise<T>;
}

/**
 * A fault: `inject` runs while the cascade is in flight and returns how many faults it injected (it checks its own
 * recovery); `before`, when given, runs just before the cascade is sent (a hold the cascade must run into).
 */
export interface Fault {
  before?: () => Promise<void>;
  inject: (run: number, fleet: string) => Promise<number>;
}

export async function drill(t: Target, name: string, run: number, inject: Fault | null, totals: Totals) {
  const fleet = `h${run}${name.replace(/-/g, '')}`;
  const { token, tree } = await t.offline(async (sql, store) => {
    const { agent, token } = await createAgentDirect(store, { fleet, name: `history-${run}`, scopes: SCOPES });
    await sql.query(`INSERT INTO effect_kinds (fleet_id, kind, reversible) VALUES ($1, 'refund', true)`, [fleet]);
    const tree = inject ? await seedTree(sql, fleet, `${fleet}/tree/`, t.tree, agent.id) : null;
    return { token, tree };
  });

  const s: Shared = {
    base: () => t.server.base,
    token,
    prefix: `${fleet}/k`,
    keys: 8,
    beliefs: [],
    retractions: [],
    reversals: [],
  };
  const subs = [new Subscriber('from-start', s, START), new Subscriber('from-now', s, null)];
  subs.forEach((x) => x.start());
  const extra: Recorded[] = [];
  const clients = runClients(s, {
    clients: name === 'pool' ? CLIENTS * 4 : CLIENTS,
    ops: OPS,
    seed: SEED + run * 101,
  });
  let injected = 0;
  await new Promise((r) => setTimeout(r, 400));
  if (tree && inject) {
    // A large cascade in flight when the fault hits: it must end whole or absent.
    await inject.before?.();
    const cascade = retractOp(s, `${fleet}-tree`, tree.root);
    injected = await inject.inject(run, fleet);
    extra.push(await cascade);
  }
  // The server rides out a database node's restart, a frozen node and a full pool: it does not die with them.
  const died = t.server.died();
  if (died) console.log(`history ${t.engine} ${fleet}: the server ${died}`);
  expect(died).toBeNull();
  const during = [...(await clients), ...extra];
  // After the fault: a few more clients, whose work must go through (the system came back, not only stayed consistent).
  const after = await runClients(s, { clients: 2, ops: 8, seed: SEED + run * 101 + 50, firstProcess: 1_000 });
  const ops = [...during, ...after];
  await new Promise((r) => setTimeout(r, 1_000));
  const committed = await committedOrder(s, START);
  await Promise.all(subs.map((x) => x.stop()));
  const streams = subs.map((x) => ({ subscriber: x.name, cursors: x.cursors }));
  const { history, violations } = await t.offline(async (sql, store) => ({
    history: await collect(sql, fleet, ops, committed, streams),
    violations: await checkInvariants(store),
  }));
  const anomalies = check(history);
  if (anomalies.length) {
    fs.mkdirSync('results', { recursive: true });
    fs.writeFileSync(`results/history-${t.engine}-${fleet}.json`, JSON.stringify(history, null, 1));
  }

  totals.runs++;
  totals.operations += ops.length;
  for (const o of ops) totals.byOutcome[o.outcome] = (totals.byOutcome[o.outcome] ?? 0) + 1;
  totals.faults[name] = (totals.faults[name] ?? 0) + injected;
  if (tree) {
    if (history.log.some((x) => x.tag === `${fleet}-tree`)) totals.cascadesCommitted++;
    else totals.cascadesAbsent++;
  }
  totals.anomalies.push(...anomalies);
  totals.lost += anomalies.filter((a) => a.type === 'lost').length;
  totals.violations += violations.length;
  const reads = ops.filter((o) => o.reads && o.outcome === 'ok').length;
  const errors: Record<string, number> = {};
  for (const o of ops) {
    const e = o.error?.replace(/\(request id [^)]*\)|\d+/g, 'N').slice(0, 120);
    if (e) errors[e] = (errors[e] ?? 0) + 1;
  }
  console.log(
    `history ${t.engine} ${fleet}: ${ops.length} operations, ${reads} reads, ${committed.length} events, injected ${injected}; errors ${JSON.stringify(errors)}`,
  );
  expect({ name, anomalies, violations }).toEqual({ name, anomalies: [], violations: [] });
  // The checker reads this very history: the same history with one acknowledged write taken out of the log is a loss.
  const acked = ops.find((o) => o.writes && o.outcome === 'ok');
  if (acked)
    expect(check({ ...history, log: history.log.filter((x) => x.tag !== acked.tag) }).map((a) => a.type)).toContain(
      'lost',
    );
  // The drill exercised what it claims: reads to judge, and subscribers that saw events.
  expect(reads).toBeGreaterThan(0);
  if (history.receipts.length) expect(committed.length).toBeGreaterThan(0);
  // And the clients got on with their work once it passed.
  expect(
    after.filter((o) => o.outcome === 'ok').length,
    `after ${name}: ${JSON.stringify(after.map((o) => o.error ?? o.outcome))}`,
  ).toBeGreaterThan(after.length / 2);
  if (tree) expect(rawId(tree.root)).toBeTruthy();
}

/** A pause of a drill's own choosing, so that the fault lands at a different point of the cascade each run. */
export const cascadeDelay = (run: number) => new Promise((r) => setTimeout(r, 50 + ((run * 337) % 900)));

/** Writes the totals to results/history-<engine>.json and prints them on one line. */
export function report(engine: string, totals: Totals, extra: Record<string, unknown> = {}): void {
  if (!totals.runs) return;
  fs.mkdirSync('results', { recursive: true });
  fs.writeFileSync(
    `results/history-${engine}.json`,
    JSON.stringify(
      { at: new Date().toISOString(), engine, seed: SEED, clients: CLIENTS, opsPerClient: OPS, ...extra, ...totals },
      null,
      2,
    ),
  );
  console.log(
    `history ${engine}: ${totals.runs} runs, ${totals.operations} operations ${JSON.stringify(totals.byOutcome)}, faults ${JSON.stringify(totals.faults)}, ` +
      `cascades under fault committed ${totals.cascadesCommitted} / absent ${totals.cascadesAbsent}, anomalies ${totals.anomalies.length}, lost ${totals.lost}, invariant violations ${totals.violations}`,
  );
}

/**
 * Takes every connection slot the database server has left (ordinary connections, until "too many clients") and
 * holds them for `ms`, so the server's pool cannot grow and its callers queue; returns 1 (one fault injected).
 */
export async function exhaustConnections(url: string, ms: number): Promise<number> {
  const held: pg.Client[] = [];
  for (let i = 0; i < 200; i++) {
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => {});
    try {
      await c.connect();
      held.push(c);
    } catch {
      break;
    }
  }
  await new Promise((r) => setTimeout(r, ms));
  await Promise.all(held.map((c) => c.end().catch(() => {})));
  return 1;
}

/** The server engines' offline session: a pg client and a store of two connections beside the running server. */
export async function besideServer<T>(url: string, fn: (sql: Sql, store: Store) => Promise<T>): Promise<T> {
  const store = await openStore({ databaseUrl: url, poolSize: 2, migrate: false });
  const db = new pg.Client({ connectionString: url });
  db.on('error', () => {});
  await db.connect();
  try {
    return await fn(db, store);
  } finally {
    await db.end().catch(() => {});
    await store.close();
  }
}
