import { EventEmitter } from 'node:events';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { type MaintenanceStep, maintain } from '../autovacuum';
import { lockDataDir } from '../lock';
import type { DB } from '../schema';
import { type OpenOptions, type Store, txHooks } from '../store';
import { templateFor } from '../template';

/** PGlite's autovacuum interval: PostgreSQL's autovacuum_naptime default. */
const MAINTENANCE_MS = 60_000;

/**
 * PGlite in this process, through its node-postgres adapter, in `opts.dataDir` (locked against a second
 * process) or in memory: one connection, so transactions run one after another; tailers are woken
 * in-process. It has no autovacuum of its own, so the store runs autovacuum's passes itself
 * (src/store/autovacuum.ts) every OpenOptions.maintenanceMs, between transactions.
 */
export async function openPglite(opts: OpenOptions): Promise<Store> {
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
  // PGlite's adapter config is a node-postgres config whose client type pg's own types do not know.
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
