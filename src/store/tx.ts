import { type Kysely, type Transaction, sql } from 'kysely';
import pg from 'pg';
import { DomainError } from '../errors/domain-error';
import { type Store, type WakeUrgency, isServer } from './store';
import type { DB } from './schema';

/**
 * The one module that opens transactions.
 *
 * Every transaction runs as the role `retract_app` (or `retract_reader`) with `retract.fleet` set
 * for its duration, so row-level security confines it to one fleet whatever its queries say.
 * Writes run SERIALIZABLE; SQLSTATE 40001 (serialization failure), 40P01 (deadlock) and 53200 when
 * it is PostgreSQL's "out of shared memory" (the shared predicate-lock table filled up, transiently,
 * while a big cascade and many small transactions overlap) are retried with full-jitter exponential
 * backoff, a bounded number of times, then reported as CONFLICT. Nothing of a failed attempt remains.
 *
 * BEGIN and the role/fleet settings travel in ONE round trip (one simple-protocol query of two
 * statements, the values quoted as literals), COMMIT in one more: a transaction costs the database
 * its own statements plus two round trips, not three. `Tx` is the Kysely bound to that connection.
 */
export type Tx = Kysely<DB>;
export type Db = Kysely<DB> | Transaction<DB>;

export interface TxOptions {
  /** The fleet whose rows this transaction may see and write; null sees no fleet's rows. */
  fleet: string | null;
  readOnly?: boolean;
  isolation?: 'serializable' | 'repeatable read' | 'read committed';
  /** Total attempts including the first (default 10). */
  maxAttempts?: number;
  /** Default: the role the store was given by `withRole`, else retract_app. */
  role?: Role;
  /**
   * The fleet's write lock on PostgreSQL (see `fleetLock` below): 'shared' (the default for a write)
   * or 'exclusive' (a retraction). Read-only transactions take none.
   */
  fleetLock?: 'shared' | 'exclusive';
  /**
   * How soon other processes hear of the commit (default 'now'). 'soon' is only for transactions
   * that append no event a subscription streams and nothing a worker claims (see Store.notifyCommitted).
   */
  wake?: WakeUrgency;
}

/**
 * The database roles transactions run as: retract_app (the API, workers, CLI), retract_reader (the MCP read
 * tools: SELECT only) and retract_mcp (the MCP write tools: writes only what their services write, 0012_mcp_writer).
 */
export type Role = 'retract_app' | 'retract_reader' | 'retract_mcp';

const ROLE_OF = new WeakMap<Store, Role>();

/**
 * The same store, whose transactions run as `role` unless they name one: so the MCP write tools call the very
 * services GraphQL calls (which open their own transactions) under a narrower role. The view delegates every
 * property to the store; closing it closes the store.
 */
export function withRole(store: Store, role: Role): Store {
  const view = Object.create(store) as Store;
  ROLE_OF.set(view, role);
  return view;
}

const RETRYABLE = new Set(['40001', '40P01']);

/** What each of the store's `tx.faults` counters (TxHooks) makes the database raise, as the real error would arrive. */
const INJECTED = [
  [
    'serializationFailures',
    sql`DO $$ BEGIN RAISE EXCEPTION 'injected serialization failure' USING ERRCODE = '40001'; END $$`,
  ],
  [
    'sharedMemoryFailures',
    sql`DO $$ BEGIN RAISE EXCEPTION 'out of shared memory' USING ERRCODE = '53200', HINT = 'injected'; END $$`,
  ],
] as const;

export function isRetryable(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const { code, message, workerConflict } = e as { code?: string; message?: string; workerConflict?: string };
  if (code === '53200') return /shared memory/.test(message ?? '');
  // Citus: a worker aborted at COMMIT for a conflict (its 40001 warning came first; see the citus engine).
  if (code === 'XX000') return workerConflict !== undefined && /^could not commit transaction/.test(message ?? '');
  return RETRYABLE.has(code ?? '');
}

/** The SQLSTATE a retried error is counted under: a Citus worker's conflict under its own code. */
function retryCode(e: unknown): string {
  const { code, workerConflict } = e as { code?: string; workerConflict?: string };
  return workerConflict ?? code ?? '';
}

/**
 * Why an attempt was retried, as /metrics labels it: a bounded set. `citus_commit_conflict` is a Citus worker that
 * aborted at COMMIT for a serialization conflict or deadlock (XX000 after its warning).
 */
export type RetryReason = 'serialization_failure' | 'deadlock' | 'out_of_shared_memory' | 'citus_commit_conflict';

function retryReason(e: unknown): RetryReason {
  const { code, workerConflict } = e as { code?: string; workerConflict?: string };
  if (code === 'XX000' && workerConflict !== undefined) return 'citus_commit_conflict';
  return code === '40P01' ? 'deadlock' : code === '53200' ? 'out_of_shared_memory' : 'serialization_failure';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` in one fleet-scoped transaction, retrying serialization failures. */
export async function inTx<T>(store: Store, opts: TxOptions, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const maxAttempts = opts.maxAttempts ?? 10;
  const isolation = opts.isolation ?? (opts.readOnly ? 'repeatable read' : 'serializable');
  const locking = isServer(store.engine) && !opts.readOnly && opts.fleet !== null;
  // jit off: the planner sizes a recursive CTE by assuming it keeps growing, so a 10k cascade's
  // closure (about 150 ms of work) was costed past every JIT threshold and spent 700 ms compiling
  // itself with inlining and optimization. No statement here runs long enough to win that back.
  const beginWith = (lock: { before: string; inside: string } | null) =>
    sql.raw(
      (lock?.before ?? '') +
        `start transaction isolation level ${isolation} ${opts.readOnly ? 'read only' : 'read write'}; ` +
        (lock?.inside ?? '') +
        `SELECT set_config('role', ${pg.escapeLiteral(opts.role ?? ROLE_OF.get(store) ?? 'retract_app')}, true), set_config('retract.fleet', ${pg.escapeLiteral(opts.fleet ?? '')}, true), set_config('jit', 'off', true)`,
    );
  // Citus sends the settings a worker needs with each statement it routes there only when they are SET LOCAL
  // (set_config is not propagated), and replays the whole string they came in on every worker connection it
  // opens: so a string of SET LOCALs alone, after BEGIN's.
  //
  // enable_seqscan off in a SERIALIZABLE transaction there: a shard holds a few fleets' rows, so for a long
  // time it is one page, and the planner's cheapest path to one key of a 1-page table is a sequential scan —
  // which under SERIALIZABLE predicate-locks the whole shard and checks every row on it against concurrent
  // writers, the other fleets of the shard included. The foreign-key check of every new belief against its
  // claim (a plan the worker caches) was one, and co-tenant fleets' turns failed each other on "conflict out
  // to pivot" (docs/findings-log.md, "Citus: turns given up"). An index scan locks the key's index page and
  // its row. PostgreSQL's manual (Serializable Isolation Level) names table-scan plans as a cause of serialization
  // failures. The setting only steers plans: a statement with no other path still scans. Read-only transactions
  // (REPEATABLE READ) take no predicate locks and keep the planner's choice.
  const workerSettings =
    store.engine === 'citus'
      ? sql.raw(
          `SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL retract.fleet = ${pg.escapeLiteral(opts.fleet ?? '')}; SET LOCAL jit = off` +
            (isolation === 'serializable' ? '; SET LOCAL enable_seqscan = off' : ''),
        )
      : null;
  // A write that lost a serialization conflict retries holding its fleet's lock exclusively: it
  // then runs alone among the fleet's writers and cannot lose again, so a hot fleet pays at most one
  // retry per write instead of a storm of them, and an uncontended one never takes the exclusive lock.
  // On Citus the writers it can lose to are those of every fleet in its shard group (SHARD_LOCK_CLASS below), so
  // a retry takes that lock exclusively too; a first attempt, a retraction's included, holds it shared.
  let mode: 'shared' | 'exclusive' = opts.fleetLock ?? 'shared';
  let retried = false;
  for (let attempt = 1; ; attempt++) {
    try {
      const lock = locking
        ? writeLocks(opts.fleet!, mode, store.engine === 'citus' ? (retried ? 'exclusive' : 'shared') : null)
        : null;
      const result = await store.db.connection().execute(async (tx) => {
        try {
          await beginWith(lock).execute(tx);
          if (workerSettings) await workerSettings.execute(tx);
          for (const [counter, raise] of INJECTED) {
            if (store.tx.faults[counter] > 0) {
              store.tx.faults[counter]--;
              await raise.execute(tx);
            }
          }
          const r = await fn(tx);
          const done = await sql<{ command?: string }>`commit`.execute(tx);
          // PostgreSQL answers COMMIT with ROLLBACK when an earlier statement's error was swallowed.
          if (done.rows[0]?.command === 'ROLLBACK')
            throw new Error('the transaction was rolled back: a statement in it failed');
          return r;
        } catch (e) {
          // Also when BEGIN went through and the settings failed: never hand back an open transaction,
          // nor a connection that still holds the fleet lock at session level.
          await sql`rollback`.execute(tx).catch(() => {});
          if (lock) await sql`SELECT pg_advisory_unlock_all()`.execute(tx).catch(() => {});
          throw e;
        }
      });
      if (!opts.readOnly) {
        store.tx.stats.turns.committed++;
        store.notifyCommitted(opts.wake ?? 'now');
      }
      return result;
    } catch (e) {
      if (!isRetryable(e)) throw e;
      if (attempt >= maxAttempts) {
        store.tx.stats.exhausted++;
        if (!opts.readOnly) store.tx.stats.turns.givenUp++;
        throw Object.assign(
          new DomainError(
            'CONFLICT',
            retryCode(e) === '53200'
              ? `the database ran out of shared lock space (SQLSTATE 53200) on every one of ${attempt} attempts; try again, and if it persists raise max_pred_locks_per_transaction`
              : `the transaction kept conflicting with concurrent writers (SQLSTATE ${retryCode(e)}) and was given up after ${attempt} attempts; try again`,
          ),
          { cause: e },
        ); // the last attempt's error, for logs and diagnostics; never sent to a client
      }
      store.tx.stats.retries++;
      const reason = retryReason(e);
      store.tx.stats.retriesByReason[reason] = (store.tx.stats.retriesByReason[reason] ?? 0) + 1;
      store.tx.onRetry?.(e, attempt);
      mode = 'exclusive';
      retried = true;
      const cap = Math.min(1000, 4 * 2 ** attempt);
      await sleep(Math.random() * cap);
    }
  }
}

/**
 * The fleet's write lock: every write transaction of a fleet holds it shared, a retraction holds it
 * exclusive, so a retraction runs alone among its fleet's writers and the turns queued behind it
 * start after it commits. Without it, a retraction's reads (the whole closure) and the turns'
 * writes beside them formed serialization cycles that PostgreSQL broke by aborting the retraction,
 * the longest transaction, again and again: 12.6 % of retractions gave up under the stress run.
 *
 * It must be held before the transaction's snapshot is taken (a SERIALIZABLE transaction that
 * waited for the lock with an older snapshot would conflict with what it waited for), and released
 * only once the commit is visible. So, in BEGIN's one round trip: the session-level lock (which
 * waits) in an implicit transaction of its own, COMMIT, then inside the new transaction the same
 * lock at transaction level (granted at once: this backend holds it) before the session one is
 * dropped. PostgreSQL releases transaction-level locks after the commit became visible, and on
 * rollback. Keyed by (class, hash of the fleet): a hash collision only makes two fleets' writes
 * queue behind each other's retractions. PGlite runs one transaction at a time and needs none.
 */
const FLEET_LOCK_CLASS = 0x52_54_46_4c;

/**
 * On Citus, the lock of the fleet's shard group: every write of a fleet holds it shared, a retried one
 * exclusively. Fleets whose distribution values hash into one shard share its tables, and under SERIALIZABLE
 * they conflict there as one fleet's transactions do: a 1-page shard is read by a sequential scan (the planner's
 * cheapest path; the foreign-key check of a new belief against its claim is one), which predicate-locks the
 * whole shard, and the writes of a co-tenant fleet's turn then form dangerous structures with it
 * (docs/findings-log.md, "Citus: turns given up"). The fleet's exclusive lock does not keep a co-tenant out, so
 * a retried turn lost to the same co-tenant up to ten times in a row and was given up. Keyed by the shard id of
 * the fleet's `claims` rows (its co-located tables hold the same fleets). Taken after the fleet lock, always:
 * one order, no deadlock between the two. A shard moved or split meanwhile only changes the key.
 */
const SHARD_LOCK_CLASS = 0x52_54_53_47;

type LockMode = 'shared' | 'exclusive';

/** One advisory lock in BEGIN's round trip: waited for at session level before the snapshot, held to the commit. */
function advisory(key: string, mode: LockMode): { before: string; inside: string } {
  const suffix = mode === 'shared' ? '_shared' : '';
  return {
    before: `SELECT pg_advisory_lock${suffix}(${key}); `,
    inside: `SELECT pg_advisory_xact_lock${suffix}(${key}); SELECT pg_advisory_unlock${suffix}(${key}); `,
  };
}

function writeLocks(fleet: string, mode: LockMode, shardMode: LockMode | null): { before: string; inside: string } {
  const locks = [advisory(`${FLEET_LOCK_CLASS}, hashtext(${pg.escapeLiteral(fleet)})`, mode)];
  if (shardMode) {
    const shard = `get_shard_id_for_distribution_column('claims', ${pg.escapeLiteral(fleet)}::text)::int`;
    locks.push(advisory(`${SHARD_LOCK_CLASS}, ${shard}`, shardMode));
  }
  return {
    before: locks.map((l) => l.before).join('') + 'COMMIT; ',
    inside: locks.map((l) => l.inside).join(''),
  };
}

/** A read-only snapshot of one fleet (REPEATABLE READ), for queries that must see one consistent state. */
export function readTx<T>(store: Store, fleet: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return inTx(store, { fleet, readOnly: true }, fn);
}

/** A SERIALIZABLE read-write transaction for one fleet; `wake` as in TxOptions. */
export function writeTx<T>(store: Store, fleet: string, fn: (tx: Tx) => Promise<T>, wake?: WakeUrgency): Promise<T> {
  return inTx(store, { fleet, wake }, fn);
}
