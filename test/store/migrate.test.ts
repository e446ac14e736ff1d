import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../db/migrations';
import { migrateToLatest } from '../../src/store/migrate';
import { engines, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';

const NAMES = Object.keys(migrations).sort();
const LAST = NAMES[NAMES.length - 1]!;

/**
 * migrateToLatest on a store that has run every migration answers from kysely_migration alone; any
 * other record is still Kysely's Migrator's to judge: it applies what is pending and refuses an
 * unknown or misordered record, as it did before the shortcut.
 */
describe.each(engines())('migrateToLatest on %s', (engine) => {
  let t: TestDb;
  storeSuite(engine, { each: true }, (s) => (t = s.t));

  it('an up-to-date store: nothing applied, the record unchanged', async () => {
    expect(await migrateToLatest(t.store.db)).toEqual([]);
    const rows = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(t.store.db);
    expect(rows.rows.map((r) => r.name)).toEqual(NAMES);
  });

  // The last migration distributes the store on Citus, and a distributed store is not undistributed (its down refuses).
  it.skipIf(engine === 'citus')('a pending migration is applied', async () => {
    await migrations[LAST]!.down!(t.store.db);
    await sql`DELETE FROM kysely_migration WHERE name = ${LAST}`.execute(t.store.db);
    expect(await migrateToLatest(t.store.db)).toEqual([LAST]);
    expect(await migrateToLatest(t.store.db)).toEqual([]);
  });

  it('a record of a migration this code lacks, or records out of order, are refused as corrupt', async () => {
    await sql`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999_from_the_future', ${new Date().toISOString()})`.execute(
      t.store.db,
    );
    await expect(migrateToLatest(t.store.db)).rejects.toThrow(
      /corrupted migrations: previously executed migration 9999_from_the_future is missing/,
    );
    await sql`DELETE FROM kysely_migration WHERE name = '9999_from_the_future'`.execute(t.store.db);
    // The first migration recorded as run after the second.
    await sql`UPDATE kysely_migration SET timestamp = ${new Date().toISOString()} WHERE name = ${NAMES[0]!}`.execute(
      t.store.db,
    );
    await expect(migrateToLatest(t.store.db)).rejects.toThrow(
      /corrupted migrations: expected previously executed migration/,
    );
  });
});
