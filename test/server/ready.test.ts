import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/api-server';
import { engines, expectInvariants } from '../support/engines';

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
      expect((await fetch(`${s.base}/health`)).status).toBe(200);
    } finally {
      await sql`DELETE FROM kysely_migration WHERE name = ${name}`.execute(s.db.store.db);
    }
    expect((await ready()).status).toBe(200);
  });
});
