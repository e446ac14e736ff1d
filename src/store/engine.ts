import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { ConfigError } from '../kernel/config-error';
import { openCitus } from './engines/citus';
import { openPglite } from './engines/pglite';
import { openPostgres } from './engines/postgres';
import { migrateToLatest } from './migrate';
import type { DB } from './schema';
import type { EngineName, OpenOptions, Store } from './store';

export type { EngineName, OpenOptions, Store } from './store';

/**
 * Chooses the engine (src/store/engines/, one file each behind the one Store of src/store/store.ts):
 * embedded PGlite without a database URL; with one, Citus when the database has the citus extension,
 * PostgreSQL otherwise.
 */

/** Opens the configured store and (by default) migrates it to the latest version. */
export async function openStore(opts: OpenOptions = {}): Promise<Store> {
  const url = opts.databaseUrl;
  const store = !url
    ? await openPglite(opts)
    : (await serverEngineAt(url, opts.engine)) === 'citus'
      ? await openCitus(opts, url)
      : await openPostgres(opts, url);
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

/**
 * Which server engine the database at `url` is: Citus when it has the citus extension. Asked on a
 * connection of its own, closed before the engine opens its pool. With `wanted`, any other answer is refused.
 */
async function serverEngineAt(url: string, wanted: OpenOptions['engine']): Promise<'postgres' | 'citus'> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => {});
    throw unreachable(e, url);
  }
  let found: 'postgres' | 'citus';
  try {
    const r = await client.query(`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'citus'`);
    found = r.rows[0].n > 0 ? 'citus' : 'postgres';
  } finally {
    await client.end().catch(() => {});
  }
  if (wanted && wanted !== found)
    throw new ConfigError(
      `RETRACT_ENGINE=${wanted}, but ${new URL(url).pathname.slice(1)} is a ${found === 'citus' ? 'Citus database (the citus extension is installed)' : 'plain PostgreSQL database (no citus extension)'}`,
    );
  return found;
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
