import { EventEmitter } from 'node:events';
import path from 'node:path';
import { Kysely, type LogEvent, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { migrationProvider } from '../../db/migrations';
import { ConfigError } from '../kernel/config-error';
import { type MaintenanceStep, maintain } from './autovacuum';
import { lockDataDir } from './lock';
import { templateFor } from './template';
import type { DB } from './schema';

/**
 * The one module that knows engine differences. Everything else talks to `store.db` (Kysely over
 * node-postgres), whichever engine sits underneath:
 *  - `postgres`: a real PostgreSQL server reached through DATABASE_URL; a pool of connections;
 *    LISTEN/NOTIFY wakes event tailers across processes.
 *  - `pglite`: PGlite in this process, through its node-postgres adapter; one connection, so
 *    transactions run one after another; tailers are woken in-process. It has no autovacuum of
 *    its own, so the store runs autovacuum's passes itself (src/store/autovacuum.ts) every
 *    OpenOptions.maintenanceMs, between transactions.
 *  - `citus`: a Citus coordinator reached through DATABASE_URL (chosen by RETRACT_ENGINE=citus, or found by
 *    its extension), fleets distributed over the workers (db/migrations/0010_citus.ts). The `postgres` engine
 *    with two differences: the fleet setting travels to the workers as SET LOCAL (src/store/tx.ts), and a
 *    serialization failure that a worker reports at COMMIT (XX000 after a 40001 warning) is marked here
 *    (markWorkerAborts) and retried there.
 */
export type EngineName = 'postgres' | 'pglite' | 'citus';

/** Whether the engine is a server other processes share (a pool, LISTEN/NOTIFY, the fleet lock). */
export function isServer(engine: EngineName): boolean {
  return engine !== 'pglite';
}

export interface Store {
  readonly engine: EngineName;
  readonly db: Kysely<DB>;
  /** Fires after this process commits a transaction that appended events (in-process wake-up). */
  readonly commits: EventEmitter;
  /** Subscribes to cross-process commit notices where the engine has them (LISTEN). */
  listen(onNotice: () => void): Promise<() => Promise<void>>;
  /**
   * Called after a write commits. Wakes this process's tailers and workers at once, and other
   * processes' through NOTIFY where the engine has it: within one event-loop tick for `'now'`, within
   * LAZY_NOTIFY_MS for `'soon'` — the urgency of commits that append nothing a tailer streams and
   * nothing a worker claims (they can only move the log's horizon). One NOTIFY covers every commit
   * before it, so each kind is coalesced, and a `'now'` one sent first takes a pending `'soon'` along.
   */
  notifyCommitted(urgency?: WakeUrgency): void;
  close(): Promise<void>;
  /** The raw PGlite instance (embedded engine only), for dumping and cloning in tests. */
  readonly pglite?: PGlite;
  /**
   * PGlite only: runs one autovacuum pass now (the store also runs one every
   * OpenOptions.maintenanceMs) and says what it did. PostgreSQL's own autovacuum does this there.
   */
  maintain?(): Promise<MaintenanceStep[]>;
  readonly description: string;
  /** The connection pool's use now: connections open, idle, and requests waiting for one (/metrics). */
  poolUse(): { total: number; idle: number; waiting: number; max: number };
  /** The transaction module's counters, fault injection and retry observer for this store (see TxHooks). */
  readonly tx: TxHooks;
}

/**
 * What src/store/tx.ts reports about, and lets a test inject into, one store's transactions: per
 * store, not per process, so two stores (or two suites) never read each other's counts.
 */
interface TxHooks {
  /**
   * Attempts retried after a retryable error, and transactions given up after the retry bound; the same retries by
   * reason (RetryReason); write transactions ("turns") committed and given up. Read at scrape time by /metrics.
   */
  readonly stats: {
    retries: number;
    exhausted: number;
    retriesByReason: Record<string, number>;
    turns: { committed: number; givenUp: number };
  };
  /**
   * Test seam: the next `serializationFailures` attempts fail with a real SQLSTATE 40001 raised by
   * the database, the next `sharedMemoryFailures` with 53200 "out of shared memory".
   */
  readonly faults: { serializationFailures: number; sharedMemoryFailures: number };
  /** Told of every retried attempt with the database's error, before the backoff (a stress run attributes them). */
  onRetry?: (error: unknown, attempt: number) => void;
}

function txHooks(given: OpenOptions['tx'] = {}): TxHooks {
  return {
    stats: { retries: 0, exhausted: 0, retriesByReason: {}, turns: { committed: 0, givenUp: 0 } },
    faults: { serializationFailures: 0, sharedMemoryFailures: 0, ...given.faults },
    onRetry: given.onRetry,
  };
}

export interface OpenOptions {
  /** postgres://… — use a real PostgreSQL. */
  databaseUrl?: string;
  /** Embedded data directory; 'memory://' for an in-memory store. */
  dataDir?: string;
  /** A migrated PGlite dump to start from (tests). */
  loadDataDir?: Blob | File;
  /** Run migrations on open (default true). */
  migrate?: boolean;
  poolSize?: number;
  /** PostgreSQL: the longest a `'soon'` commit waits for its NOTIFY (default LAZY_NOTIFY_MS). */
  lazyNotifyMs?: number;
  /** Which server engine DATABASE_URL must be ('postgres' or 'citus'): opening fails when the database is the other. */
  engine?: 'postgres' | 'citus';
  /** PGlite: the interval between autovacuum passes (default MAINTENANCE_MS; 0: none but `maintain()`). */
  maintenanceMs?: number;
  /** Seams into the transaction module (TxHooks): initial faults and a retry observer. */
  tx?: { faults?: Partial<TxHooks['faults']>; onRetry?: TxHooks['onRetry'] };
  /** Told of every statement after it ran (Kysely's log hook): tracing's SQL spans (src/server/use-tracing.ts). Unset: no hook at all. */
  onQuery?: (event: LogEvent) => void;
}

/** PGlite's autovacuum interval: PostgreSQL's autovacuum_naptime default. */
const MAINTENANCE_MS = 60_000;

const NOTIFY_CHANNEL = 'retract_events';

/** How soon other processes must hear of a commit: see Store.notifyCommitted. */
export type WakeUrgency = 'now' | 'soon';
/** The longest a `'soon'` commit waits for its NOTIFY (OpenOptions.lazyNotifyMs overrides it). */
const LAZY_NOTIFY_MS = 50;

/** Opens the configured store and (by default) migrates it to the latest version. */
export async function openStore(opts: OpenOptions = {}): Promise<Store> {
  const store = opts.databaseUrl
    ? await openPostgres(opts, opts.databaseUrl, txHooks(opts.tx))
    : await openPglite(opts);
  if (opts.migrate !== false) {
    try {
      await migrateToLatest(store.db);
    } catch (e) {
      await store.close();
      throw e;
    }
  }
  return store;
}

async function openPostgres(opts: OpenOptions, url: string, tx: TxHooks): Promise<Store> {
  const { poolSize = 10, lazyNotifyMs = LAZY_NOTIFY_MS } = opts;
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {
    /* an idle client died; the pool replaces it */
  });
  // Only a Citus pool's connections are watched for the workers' conflict warnings (the detecting
  // connection is closed, not pooled, so every pooled one is watched from its start).
  let citus = false;
  pool.on('connect', (client) => {
    // A client checked out when the database goes away (its postmaster killed, a failover) emits 'error'
    // outside any query, and the pool listens only to idle ones: unheard, that error ends the process. The
    // statement in flight rejects on its own and the pool drops the broken client when it is released.
    client.on('error', () => {});
    if (citus) markWorkerAborts(client);
  });
  const found = (citus = await citusInstalled(pool, url)) ? 'citus' : 'postgres';
  if (opts.engine && opts.engine !== found) {
    await pool.end();
    throw new ConfigError(
      `RETRACT_ENGINE=${opts.engine}, but ${new URL(url).pathname.slice(1)} is a ${found === 'citus' ? 'Citus database (the citus extension is installed)' : 'plain PostgreSQL database (no citus extension)'}`,
    );
  }
  const engine = found;
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), ...(opts.onQuery ? { log: opts.onQuery } : {}) });
  const commits = new EventEmitter();
  commits.setMaxListeners(0);
  const listeners = new Set<pg.Client>();
  let notifyPending = false;
  let lazyNotify: NodeJS.Timeout | null = null;
  const notify = () => {
    if (lazyNotify) clearTimeout(lazyNotify);
    lazyNotify = null;
    pool.query(`NOTIFY ${NOTIFY_CHANNEL}`).catch(() => {});
  };
  return {
    engine,
    db,
    commits,
    tx,
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: poolSize }),
    description: `${engine} ${new URL(url).host}${new URL(url).pathname}`,
    async listen(onNotice) {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => {});
      await client.connect();
      client.on('notification', () => onNotice());
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
      listeners.add(client);
      return async () => {
        listeners.delete(client);
        await client.end().catch(() => {});
      };
    },
    notifyCommitted(urgency = 'now') {
      commits.emit('commit');
      // A NOTIFY is not free: PostgreSQL serialises the commits of notifying transactions on one
      // lock and signals every listener, and here it is one more round trip (FINDINGS §6, turns, has
      // what one per assertBelief cost).
      if (urgency === 'soon') {
        if (!lazyNotify && !notifyPending) lazyNotify = setTimeout(notify, lazyNotifyMs).unref();
        return;
      }
      if (notifyPending) return;
      notifyPending = true;
      setImmediate(() => {
        notifyPending = false;
        notify();
      });
    },
    async close() {
      if (lazyNotify) clearTimeout(lazyNotify);
      for (const c of listeners) await c.end().catch(() => {});
      listeners.clear();
      await db.destroy();
    },
  };
}

/**
 * The first connection's failure (refused, unknown host, bad password, no such database) as a
 * one-line refusal naming the server and database but not the URL's password; an operator fixes it.
 */
function unreachable(e: unknown, url: string): unknown {
  const code = (e as { code?: unknown }).code;
  if (typeof code !== 'string') return e;
  const u = new URL(url);
  return new ConfigError(
    `DATABASE_URL: cannot connect to ${u.host}${u.pathname} (${(e as Error).message}); check that PostgreSQL runs there and the URL's user, password and database`,
  );
}

/** Whether the database has the citus extension, on a connection of the pool that is then closed. */
async function citusInstalled(pool: pg.Pool, url: string): Promise<boolean> {
  const client = await pool.connect().catch(async (e) => {
    await pool.end();
    throw unreachable(e, url);
  });
  try {
    return (await client.query(`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'citus'`)).rows[0].n > 0;
  } finally {
    client.release(true);
  }
}

/** SQLSTATEs of the warning a Citus worker sends when it aborts a transaction at COMMIT for a conflict. */
const WORKER_CONFLICT = new Set(['40001', '40P01']);

/**
 * Citus reports a serialization failure that a worker hits at COMMIT as `XX000 could not commit transaction for
 * shard …`, after a WARNING carrying the worker's 40001. The warning says the worker aborted, so nothing of the
 * attempt remains and it may be retried; a bare XX000 (a connection lost mid-commit, say) may have committed and
 * must not be. Each statement's error is given the SQLSTATE of the conflict warning that came before it on the
 * same connection, as `workerConflict` (src/store/tx.ts reads it).
 */
function markWorkerAborts(client: pg.PoolClient): void {
  let warned: string | null = null;
  client.on('notice', (n: { severity?: string; code?: string }) => {
    if (n.code && WORKER_CONFLICT.has(n.code)) warned = n.code;
  });
  const query = client.query.bind(client) as (...a: unknown[]) => unknown;
  (client as unknown as { query: (...a: unknown[]) => unknown }).query = (...args: unknown[]) => {
    warned = null;
    const r = query(...args);
    if (r instanceof Promise) {
      return r.catch((e: unknown) => {
        if (warned && typeof e === 'object' && e !== null) (e as { workerConflict?: string }).workerConflict = warned;
        throw e;
      });
    }
    return r;
  };
}

async function openPglite(opts: OpenOptions): Promise<Store> {
  const dataDir = opts.dataDir ?? process.env.RETRACT_DATA_DIR ?? './.retract';
  const inMemory = dataDir.startsWith('memory://');
  const release = inMemory ? () => {} : lockDataDir(path.resolve(dataDir));
  let lite: PGlite;
  try {
    const pgdata = inMemory ? undefined : path.resolve(dataDir, 'pgdata');
    lite = await PGlite.create({
      dataDir: pgdata,
      extensions: { vector },
      loadDataDir: opts.loadDataDir ?? (pgdata && opts.migrate !== false ? templateFor(pgdata) : undefined),
    });
  } catch (e) {
    release();
    throw e;
  }
  const pool = new pg.Pool({ ...(createPgConfig(lite) as unknown as pg.PoolConfig), max: 1 });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), ...(opts.onQuery ? { log: opts.onQuery } : {}) });
  const commits = new EventEmitter();
  commits.setMaxListeners(0);
  const notices = new Set<() => void>();
  let closed = false;
  // One pass at a time; close() waits for the one in flight.
  let pass: Promise<MaintenanceStep[]> | null = null;
  const runPass = () => (pass ??= maintain(db).finally(() => (pass = null)));
  const every = opts.maintenanceMs ?? MAINTENANCE_MS;
  let warned = false;
  const timer =
    every > 0
      ? setInterval(() => {
          if (closed) return;
          runPass().catch((e) => {
            // Once per store: a pass that fails will fail again each interval.
            if (!closed && !warned) process.emitWarning(`PGlite maintenance pass failed: ${(e as Error).message}`);
            warned = true;
          });
        }, every).unref()
      : null;
  return {
    engine: 'pglite',
    maintain: runPass,
    db,
    commits,
    tx: txHooks(opts.tx),
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: 1 }),
    pglite: lite,
    description: inMemory ? 'pglite (memory)' : `pglite ${path.resolve(dataDir)}`,
    async listen(onNotice) {
      notices.add(onNotice);
      return async () => {
        notices.delete(onNotice);
      };
    },
    notifyCommitted() {
      // One process: every commit wakes every tailer at once, whatever its urgency.
      commits.emit('commit');
      for (const n of notices) n();
    },
    async close() {
      if (closed) return;
      closed = true;
      if (timer) clearInterval(timer);
      await pass?.catch(() => {});
      await db.destroy();
      await lite.close();
      release();
    },
  };
}

/** Applies every pending migration in db/migrations; throws with the failing migration's name. */
export async function migrateToLatest(db: Kysely<DB>): Promise<string[]> {
  if (await upToDate(db)) return [];
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) {
    throw new Error(
      `migration ${failed?.migrationName ?? '(unknown)'} failed: ${(error as Error).message ?? String(error)}`,
    );
  }
  return (results ?? []).map((r) => r.migrationName);
}

/**
 * Whether the store has recorded every migration of db/migrations, and no other, in the order Kysely's
 * Migrator checks (by timestamp, then name): then it would apply nothing and report nothing. Two
 * statements, where the Migrator first introspects every table and column twice (the larger part of
 * an existing store's start on PGlite). Anything else (a fresh store, a pending or unknown migration,
 * an order the Migrator would call corrupt) is left to the Migrator, under its lock.
 */
export async function upToDate(db: Kysely<DB>): Promise<boolean> {
  const table = await sql<{ present: boolean }>`SELECT to_regclass('kysely_migration') IS NOT NULL AS present`.execute(
    db,
  );
  if (!table.rows[0]?.present) return false;
  const done = await sql<{ name: string; timestamp: string }>`SELECT name, timestamp FROM kysely_migration`.execute(db);
  const applied = done.rows
    .sort((a, b) =>
      a.timestamp === b.timestamp
        ? a.name.localeCompare(b.name)
        : new Date(a.timestamp).getTime() - new Date(b.timestamp).getTime(),
    )
    .map((r) => r.name);
  const wanted = Object.keys(await migrationProvider.getMigrations()).sort();
  return applied.length === wanted.length && applied.every((name, i) => name === wanted[i]);
}

/** Version strings of the engine and its vector extension, for reports and benchmarks. */
export async function engineVersions(db: Kysely<DB>): Promise<{ server: string; vector: string | null }> {
  const r = await sql<{ server: string; vector: string | null }>`
    SELECT current_setting('server_version') AS server,
           (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector`.execute(db);
  return r.rows[0]!;
}

/** Whether the database answers a trivial statement (the /health probe). */
export async function answers(db: Kysely<DB>): Promise<boolean> {
  return sql`SELECT 1`.execute(db).then(
    () => true,
    () => false,
  );
}

/**
 * Opens the store the environment names: DATABASE_URL (a PostgreSQL server, or a Citus coordinator), else embedded
 * PGlite in RETRACT_DATA_DIR; RETRACT_ENGINE names the engine outright (pglite ignores DATABASE_URL).
 */
export function openStoreFromEnv(env: NodeJS.ProcessEnv = process.env, extra: OpenOptions = {}): Promise<Store> {
  return openStore({
    ...storeTarget(namedEngine(env.RETRACT_ENGINE), env.DATABASE_URL, env.RETRACT_DATA_DIR),
    ...extra,
  });
}

/** RETRACT_ENGINE, checked: the engine it names outright, or null (unset): found from DATABASE_URL. */
export function namedEngine(value: string | undefined): EngineName | null {
  if (value === undefined || value === '') return null;
  if (value !== 'postgres' && value !== 'citus' && value !== 'pglite')
    throw new ConfigError(`RETRACT_ENGINE must be pglite, postgres or citus (got '${value}')`);
  return value;
}

/** Where a store opens: a named pglite ignores DATABASE_URL; a named server engine needs it, and the database must be that engine. */
export function storeTarget(
  engine: EngineName | null,
  databaseUrl: string | null | undefined,
  dataDir: string | undefined,
): OpenOptions {
  if ((engine === 'postgres' || engine === 'citus') && !databaseUrl)
    throw new ConfigError(`RETRACT_ENGINE=${engine} needs DATABASE_URL`);
  if (engine === 'pglite') return { dataDir };
  return { databaseUrl: databaseUrl || undefined, engine: engine ?? undefined, dataDir };
}
