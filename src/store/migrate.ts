import { type Kysely, Migrator, sql } from 'kysely';
import { migrationProvider } from '../../db/migrations';
import type { DB } from './schema';

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
