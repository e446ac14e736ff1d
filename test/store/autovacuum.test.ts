import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openStore } from '../../src/store/engine';
import { maintain } from '../../src/store/autovacuum';
import { engines, testStore } from '../support/engines';

/**
 * PGlite runs no autovacuum: without the store's own passes its planner statistics would stay as
 * the first ANALYZE left them (or absent) and dead row versions would never be reclaimed.
 */
const stats = async (db: Parameters<typeof maintain>[0]) => {
  await sql`SELECT pg_stat_force_next_flush()`.execute(db);
  return sql<{ reltuples: number; n_dead_tup: number; n_mod_since_analyze: number }>`
    SELECT c.reltuples::float8 AS reltuples, s.n_dead_tup::int AS n_dead_tup, s.n_mod_since_analyze::int AS n_mod_since_analyze
      FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'scratch'`
    .execute(db)
    .then((r) => r.rows[0]!);
};

describe("PGlite maintenance (autovacuum's passes, run by the store)", () => {
  it('a pass vacuums and analyzes a table autovacuum would, and then has nothing to do', async () => {
    const store = await openStore({ dataDir: 'memory://', migrate: false, maintenanceMs: 0 });
    try {
      await sql`CREATE TABLE scratch (id int PRIMARY KEY, v int)`.execute(store.db);
      await sql`INSERT INTO scratch SELECT g, 0 FROM generate_series(1, 5000) g`.execute(store.db);
      await sql`UPDATE scratch SET v = 1`.execute(store.db);
      const before = await stats(store.db);
      expect(before).toMatchObject({ n_dead_tup: 5000 });
      expect(before.reltuples).toBeLessThan(0); // never analyzed
      const steps = await store.maintain!();
      expect(steps).toContainEqual({ table: 'scratch', action: 'vacuum analyze' });
      const after = await stats(store.db);
      expect(after).toEqual({ reltuples: 5000, n_dead_tup: 0, n_mod_since_analyze: 0 });
      expect(await store.maintain!()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('runs by itself every maintenanceMs, between transactions, and close() waits for a pass in flight', async () => {
    const store = await openStore({ dataDir: 'memory://', migrate: false, maintenanceMs: 50 });
    try {
      await sql`CREATE TABLE scratch (id int PRIMARY KEY, v int)`.execute(store.db);
      await sql`INSERT INTO scratch SELECT g, 0 FROM generate_series(1, 5000) g`.execute(store.db);
      let s = await stats(store.db);
      for (let i = 0; i < 100 && s.reltuples < 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        s = await stats(store.db);
      }
      expect(s.reltuples).toBe(5000);
    } finally {
      await store.close();
    }
  });

  it.each(engines())(
    "the rules are autovacuum's own: a table below every threshold is left alone (%s)",
    async (engine) => {
      const t = await testStore(engine);
      try {
        await sql`CREATE TABLE scratch (id int PRIMARY KEY)`.execute(t.store.db);
        await sql`INSERT INTO scratch SELECT g FROM generate_series(1, 40) g`.execute(t.store.db);
        await stats(t.store.db); // flushes the inserts' counts, so the ANALYZE below accounts for them
        await sql`ANALYZE scratch`.execute(t.store.db);
        // 40 changes: under autovacuum_analyze_threshold (50) + 10 % of 40 rows.
        await sql`DELETE FROM scratch WHERE id <= 40`.execute(t.store.db);
        expect((await maintain(t.store.db)).filter((x) => x.table === 'scratch')).toEqual([]);
      } finally {
        await t.close();
      }
    },
  );
});
