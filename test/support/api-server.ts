import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino, { type Logger } from 'pino';
import type { Adjudicator } from '../../src/adjudication/adjudicator';
import { HeuristicAdjudicator } from '../../src/adjudication/heuristic';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES, type Scope } from '../../src/agent/scopes';
import { gid } from '../../src/kernel/ids';
import type { Core } from '../../src/core';
import type { Embedder } from '../../src/embedding/embedder';
import { type App, type AppOptions, createApp } from '../../src/server/app';
import type { EngineName, Store } from '../../src/store/engine';
import { serverLogs } from './api-client';
import { embedder as testEmbedder, testStore, type TestDb } from './engines';

/** The operator's token every API test server is started with (agent `bootstrap`, fleet `default`). */
export const BOOTSTRAP_TOKEN = 'bootstrap-token-for-api-tests-0123456789';

/** Log lines a test server wrote, parsed (pino JSON), so a test can find what was logged for a request id. */
class LogCapture {
  readonly lines: Array<Record<string, unknown>> = [];
  readonly logger: Logger;
  constructor() {
    const lines = this.lines;
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString('utf8').split('\n'))
          if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    this.logger = pino({ level: 'info' }, stream);
    serverLogs.add(this);
  }
}

/**
 * The heuristic adjudicator behind an optional gate: while `hold()` is in force, adjudicate() waits
 * (the lease stays live), so a test can race a second adjudication against the first. The verdict is
 * always the heuristic's own.
 */
export class GatedHeuristic implements Adjudicator {
  readonly id = 'heuristic';
  private readonly inner = new HeuristicAdjudicator();
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;
  calls = 0;
  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open?.();
    this.gate = null;
    this.open = null;
  }
  async adjudicate(...args: Parameters<Adjudicator['adjudicate']>) {
    this.calls++;
    if (this.gate) await this.gate;
    return this.inner.adjudicate(...args);
  }
}

export interface ApiServer {
  engine: EngineName;
  db: TestDb;
  /** The store the app uses (possibly a wrapped view of db.store). */
  store: Store;
  app: App;
  core: Core;
  /** http://host:port */
  base: string;
  /** http://host:port/graphql */
  http: string;
  /** ws://host:port/graphql */
  ws: string;
  logs: LogCapture;
  close(): Promise<void>;
}

export interface StartOptions {
  config?: AppOptions['config'];
  adjudicator?: Adjudicator;
  embedder?: Embedder;
  /** Reuse this database instead of a fresh one (it is not closed by close()). */
  db?: TestDb;
  /** Wraps the store the app is given (e.g. to count statements); the test db keeps the original. */
  wrapStore?: (s: Store) => Store;
  /** GET /metrics settings (src/server/metrics/settings.ts). */
  metrics?: AppOptions['metrics'];
}

/** A real listening server (HTTP, SSE, graphql-ws) on a fresh migrated database of `engine`, port chosen by the OS. */
export async function startApiServer(engine: EngineName, opts: StartOptions = {}): Promise<ApiServer> {
  const db = opts.db ?? (await testStore(engine));
  const store = opts.wrapStore ? opts.wrapStore(db.store) : db.store;
  const logs = new LogCapture();
  const app = await createApp({
    config: { port: 0, host: '127.0.0.1', bootstrapToken: BOOTSTRAP_TOKEN, production: false, ...opts.config },
    store,
    embedder: opts.embedder ?? testEmbedder,
    adjudicator: opts.adjudicator ?? new HeuristicAdjudicator(),
    logger: logs.logger,
    metrics: opts.metrics,
  });
  await app.listen();
  const base = app.url();
  return {
    engine,
    db,
    store,
    app,
    core: app.core,
    base,
    http: `${base}/graphql`,
    ws: `${base.replace(/^http/, 'ws')}/graphql`,
    logs,
    async close() {
      await app.close();
      if (!opts.db) await db.close();
    },
  };
}

export interface TestAgent {
  /** Database id. */
  id: string;
  /** Relay global id. */
  gid: string;
  fleet: string;
  name: string;
  token: string;
  scopes: readonly string[];
}

let agentSeq = 0;

/** An agent with exactly `scopes` in `fleet` (created outside the API) and its bearer token. */
export async function agentWith(
  store: Store,
  fleet: string,
  scopes: readonly string[],
  name = 'agent',
): Promise<TestAgent> {
  const n = `${name}-${process.pid}-${++agentSeq}`;
  const { agent, token } = await createAgentDirect(store, { fleet, name: n, scopes });
  return { id: agent.id, gid: gid('Agent', agent.id), fleet, name: n, token, scopes };
}

/** Every scope but `admin` (which implies all the others). */
export const NON_ADMIN_SCOPES = SCOPES.filter((s) => s !== 'admin') as Scope[];

/** The public tables, as the owner sees them. */
async function tableNames(store: Store): Promise<string[]> {
  const r = await sql<{ t: string }>`
    SELECT table_name AS t FROM information_schema.tables
     WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`.execute(store.db);
  return r.rows.map((x) => x.t);
}

/**
 * md5 of every row of every table, read as the owner with row security off (so no fleet is
 * hidden) in one snapshot. Two equal digests mean nothing was written anywhere.
 */
export async function tableDigests(store: Store): Promise<Record<string, string>> {
  const tables = await tableNames(store);
  // One statement for all tables (one round trip), in one snapshot.
  const parts = tables.map(
    (t) =>
      sql`SELECT ${t}::text AS t, count(*)::int AS n, md5(string_agg(x::text, ',' ORDER BY x::text)) AS d FROM ${sql.table(t)} x`,
  );
  return store.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      await sql`SET LOCAL row_security = off`.execute(tx);
      const r = await sql<{ t: string; n: number; d: string | null }>`${sql.join(parts, sql` UNION ALL `)}`.execute(tx);
      return Object.fromEntries(r.rows.map((x) => [x.t, `${x.n}:${x.d ?? 'empty'}`]));
    });
}
