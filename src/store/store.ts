import type { EventEmitter } from 'node:events';
import type { PGlite } from '@electric-sql/pglite';
import type { Kysely, LogEvent } from 'kysely';
import type { MaintenanceStep } from './autovacuum';
import type { DB } from './schema';

/**
 * The one interface every engine implements (src/store/engines/: postgres.ts, pglite.ts, citus.ts, the
 * same shape each); src/store/engine.ts chooses among them. Everything else talks to `store.db`
 * (Kysely over node-postgres), whichever engine sits underneath.
 */
export type EngineName = 'postgres' | 'pglite' | 'citus';

/** Whether the engine is a server other processes share (a pool, LISTEN/NOTIFY, the fleet lock). */
export function isServer(engine: EngineName): boolean {
  return engine !== 'pglite';
}

/** How soon other processes must hear of a commit: see Store.notifyCommitted. */
export type WakeUrgency = 'now' | 'soon';

export interface Store {
  /** Which engine this is. */
  readonly engine: EngineName;
  /** Every statement of the product runs here. */
  readonly db: Kysely<DB>;
  /** Fires after this process commits a transaction that appended events (in-process wake-up). */
  readonly commits: EventEmitter;
  /** Subscribes to cross-process commit notices where the engine has them (LISTEN); resolves to the unsubscribe. */
  listen(onNotice: () => void): Promise<() => Promise<void>>;
  /**
   * Called after a write commits. Wakes this process's tailers and workers at once, and other
   * processes' through NOTIFY where the engine has it: within one event-loop tick for `'now'`, within
   * LAZY_NOTIFY_MS for `'soon'` — the urgency of commits that append nothing a tailer streams and
   * nothing a worker claims (they can only move the log's horizon). One NOTIFY covers every commit
   * before it, so each kind is coalesced, and a `'now'` one sent first takes a pending `'soon'` along.
   */
  notifyCommitted(urgency?: WakeUrgency): void;
  /** Closes every connection (and, for PGlite, the database and its data directory's lock). */
  close(): Promise<void>;
  /** The raw PGlite instance (embedded engine only), for dumping and cloning in tests. */
  readonly pglite?: PGlite;
  /**
   * PGlite only: runs one autovacuum pass now (the store also runs one every
   * OpenOptions.maintenanceMs) and says what it did. PostgreSQL's own autovacuum does this there.
   */
  maintain?(): Promise<MaintenanceStep[]>;
  /** The engine and where it is (`postgres 127.0.0.1:5432/db`, `pglite (memory)`), for logs and reports. */
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

/** A store's TxHooks at open: zero counts, the faults and retry observer `given`. */
export function txHooks(given: OpenOptions['tx'] = {}): TxHooks {
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
  /** Told of every statement after it ran (Kysely's log hook): tracing's SQL spans (src/server/plugins/use-tracing.ts). Unset: no hook at all. */
  onQuery?: (event: LogEvent) => void;
}
