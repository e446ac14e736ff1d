import { EventEmitter } from 'node:events';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DB } from '../schema';
import { type OpenOptions, type Store, txHooks } from '../store';

const NOTIFY_CHANNEL = 'retract_events';

/** The longest a `'soon'` commit waits for its NOTIFY (OpenOptions.lazyNotifyMs overrides it). */
const LAZY_NOTIFY_MS = 50;

/** How a server engine built on this one differs (src/store/engines/citus.ts): its name, and a hook on each pooled connection. */
export interface PostgresVariant {
  engine: 'citus';
  /** Called on each new pooled connection, from its start. */
  onConnect(client: pg.PoolClient): void;
}

/**
 * A real PostgreSQL server reached through `url`: a pool of connections; LISTEN/NOTIFY wakes event
 * tailers across processes.
 */
export async function openPostgres(opts: OpenOptions, url: string, variant?: PostgresVariant): Promise<Store> {
  const { poolSize = 10, lazyNotifyMs = LAZY_NOTIFY_MS } = opts;
  const engine = variant?.engine ?? 'postgres';
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on('error', () => {
    /* an idle client died; the pool replaces it */
  });
  pool.on('connect', (client) => {
    // A client checked out when the database goes away (its postmaster killed, a failover) emits 'error'
    // outside any query, and the pool listens only to idle ones: unheard, that error ends the process. The
    // statement in flight rejects on its own and the pool drops the broken client when it is released.
    client.on('error', () => {});
    variant?.onConnect(client);
  });
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
    tx: txHooks(opts.tx),
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
