import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/api-server';
import { engines, expectInvariants } from '../support/engines';
import { samples, scrape } from '../support/metrics';

/**
 * GET /ready, what a load balancer or orchestrator asks before sending work: 200 when the database answers and has
 * recorded exactly this build's migrations, 503 naming the reason otherwise, and 503 once the server drains (the
 * flip during a real SIGTERM is in test/server/shutdown.test.ts). /health is liveness and stays as it was.
 */
describe.each(engines())('/ready on %s', (engine) => {
  let s: ApiServer;
  beforeAll(async () => {
    s = await startApiServer(engine);
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  const ready = async () => {
    const r = await fetch(`${s.base}/ready`);
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it("answers 200 when the database answers and its migrations are this build's", async () => {
    expect(await ready()).toEqual({
      status: 200,
      body: { status: 'ready', engine, database: true, migrations: true, accepting: true },
    });
    expect(samples((await scrape(s.base)).text).get('retract_ready')).toBe(1);
  });

  it('answers 503 "migrations not current" while the database records a migration this build does not carry', async () => {
    const name = '9999_from_a_newer_build';
    await sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${name}, ${new Date().toISOString()})`.execute(
      s.db.store.db,
    );
    try {
      expect(await ready()).toEqual({
        status: 503,
        body: { status: 'migrations not current', engine, database: true, migrations: false, accepting: true },
      });
      // GET /metrics says the same, for a dashboard's readiness panel.
      expect(samples((await scrape(s.base)).text).get('retract_ready')).toBe(0);
      expect((await fetch(`${s.base}/health`)).status).toBe(200);
    } finally {
      await sql`DELETE FROM kysely_migration WHERE name = ${name}`.execute(s.db.store.db);
    }
    expect((await ready()).status).toBe(200);
  });
});

/**
 * A real outage: PostgreSQL refuses every connection to the server's database (ALLOW_CONNECTIONS false, its sessions
 * ended), then takes them again. PostgreSQL only: the embedded engine has no connection to lose.
 */
describe.skipIf(!engines().includes('postgres'))('/ready while PostgreSQL refuses the database', () => {
  it('answers 503 "database unavailable" (so does /health; retract_ready and retract_metrics_database_up are 0), and 200 again once PostgreSQL accepts connections', async () => {
    const s = await startApiServer('postgres');
    const name = new URL(s.db.url!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.RETRACT_TEST_DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
      const r = await fetch(`${s.base}/ready`);
      expect({ status: r.status, body: await r.json() }).toEqual({
        status: 503,
        body: {
          status: 'database unavailable',
          engine: 'postgres',
          database: false,
          migrations: null,
          accepting: true,
        },
      });
      expect((await fetch(`${s.base}/health`)).status).toBe(503);
      const m = samples((await scrape(s.base)).text);
      expect([m.get('retract_ready'), m.get('retract_metrics_database_up')]).toEqual([0, 0]);

      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      let again = 0;
      for (const until = Date.now() + 20_000; Date.now() < until; await new Promise((w) => setTimeout(w, 200)))
        if ((again = (await fetch(`${s.base}/ready`)).status) === 200) break;
      expect(again).toBe(200);
      await expectInvariants(s.db.store);
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => {});
      await admin.end();
      await s.close();
    }
  }, 60_000);
});
