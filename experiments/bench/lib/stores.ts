import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { type EngineName, type Store, openStore } from '../../../src/store/engine';
import { DataDirLockedError, lockDataDir } from '../../../src/store/lock';

/**
 * Fresh, migrated databases for benchmarks, never the caller's own: on PostgreSQL a new database
 * created on the server (DATABASE_URL's server and credentials, or the local default) and dropped
 * afterwards; on PGlite a new data directory under the OS temp dir, removed afterwards.
 */
export const DEFAULT_SERVER = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Benchmarks' PGlite stores run no maintenance passes of their own (src/store/autovacuum.ts): a
 * benchmark vacuums and analyzes when it means to, as it keeps PostgreSQL's autovacuum off the
 * tables it measures.
 */
const BENCH_MAINTENANCE = 0;

/** Where a benchmark database lives: enough for another process to open it. */
export type Location = { engine: 'postgres'; databaseUrl: string } | { engine: 'pglite'; dataDir: string };

/** The owner's connection, for bulk SQL outside the application's roles (RLS does not bind a superuser). */
export interface OwnerSql {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

export interface BenchDb {
  readonly location: Location;
  /** Opens an application store on it (no migration). On PGlite only one may be open at a time, in one process. */
  open(poolSize?: number): Promise<Store>;
  /**
   * The owner's SQL connection. On PGlite it holds the data directory: close it before another
   * process opens it, and when this process already has a store open on it, pass that store: the
   * owner's SQL then runs on its instance (a second instance on one data directory would not see
   * the first one's writes, nor it this one's).
   */
  owner(open?: Store): Promise<OwnerSql>;
  drop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Removes PGlite data directories `<tmp>/<name>-*` that a killed benchmark left behind: those whose
 * lock no live process holds. On tmpfs they hold memory until removed (the cascade's stores, some
 * GB each, once exhausted a 24 GiB machine).
 */
function removeLeftovers(name: string): void {
  for (const tmp of new Set(
    ['/dev/shm', os.tmpdir(), process.env.RETRACT_BENCH_TMP].filter((d): d is string => !!d && fs.existsSync(d)),
  )) {
    for (const entry of fs.readdirSync(tmp)) {
      if (!entry.startsWith(`${name}-`)) continue;
      const dir = path.join(tmp, entry);
      try {
        lockDataDir(dir)();
      } catch (e) {
        if (e instanceof DataDirLockedError) continue;
        throw e;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
}

export interface FreshDbOptions {
  /**
   * PGlite: the data directory may outgrow memory (the cascade's stores reach several GB), so it
   * goes to the OS temp dir on disk, not tmpfs. RETRACT_BENCH_TMP overrides either choice.
   */
  large?: boolean;
}

/** Creates (replacing a leftover of the same name) and migrates a benchmark database. */
export async function freshDb(
  engine: EngineName,
  serverUrl: string,
  name: string,
  opts: FreshDbOptions = {},
): Promise<BenchDb> {
  if (!/^[a-z][a-z0-9_]{0,40}$/.test(name)) throw new Error(`bad benchmark database name ${name}`);
  if (engine === 'citus')
    throw new Error('these benchmarks run on pglite or postgres; the Citus one is `npm run bench -- citus`');
  if (engine === 'postgres') {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const databaseUrl = withDatabase(serverUrl, name);
    const s = await openStore({ databaseUrl, poolSize: 1 });
    await s.close();
    return {
      location: { engine, databaseUrl },
      open: (poolSize = 4) => openStore({ databaseUrl, migrate: false, poolSize }),
      async owner() {
        const c = new pg.Client({ connectionString: databaseUrl });
        await c.connect();
        return {
          query: async <R>(text: string, params?: unknown[]) => (await c.query(text, params)).rows as R[],
          close: () => c.end(),
        };
      },
      async drop() {
        const a = new pg.Client({ connectionString: serverUrl });
        await a.connect();
        try {
          await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        } finally {
          await a.end();
        }
      },
    };
  }
  // tmpfs when there is one, for stores that fit in memory: PGlite on a disk pays a file-system
  // sync per commit.
  removeLeftovers(name);
  const tmp = process.env.RETRACT_BENCH_TMP || (!opts.large && fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir());
  const dataDir = fs.mkdtempSync(path.join(tmp, `${name}-`));
  const s = await openStore({ dataDir, maintenanceMs: BENCH_MAINTENANCE });
  await s.close();
  return {
    location: { engine, dataDir },
    open: () => openStore({ dataDir, migrate: false, maintenanceMs: BENCH_MAINTENANCE }),
    async owner(open?: Store) {
      const store = open ?? (await openStore({ dataDir, migrate: false, maintenanceMs: BENCH_MAINTENANCE }));
      const lite = store.pglite!;
      return {
        query: async <R>(text: string, params?: unknown[]) => {
          if (params && params.length) return (await lite.query<R>(text, params)).rows;
          const rs = await lite.exec(text);
          return (rs[rs.length - 1]?.rows ?? []) as R[];
        },
        close: async () => {
          if (!open) await store.close();
        },
      };
    },
    async drop() {
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Opens a store at a location handed over from another process. */
export function openAt(loc: Location, poolSize = 4): Promise<Store> {
  return loc.engine === 'postgres'
    ? openStore({ databaseUrl: loc.databaseUrl, migrate: false, poolSize })
    : openStore({ dataDir: loc.dataDir, migrate: false, maintenanceMs: BENCH_MAINTENANCE });
}
