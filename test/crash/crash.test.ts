import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { gid } from '../../src/kernel/ids';
import { checkInvariants } from '../../src/invariants/check';
import { testStore, type TestDb } from '../support/engines';

const KILLS = Number(process.env.RETRACT_CRASH_KILLS ?? 2);
const SIZE = Number(process.env.RETRACT_CRASH_SIZE ?? 2_000);
const TOKEN = 'crash-operator-token-0123456789';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

async function startServer(url: string): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], {
    env: { ...process.env, DATABASE_URL: url, PORT: String(port), RETRACT_BOOTSTRAP_TOKEN: TOKEN, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    try {
      const r = await fetch(`${base}/health`);
      if (r.status === 200) return { child, base };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('server did not become healthy');
}

/**
 * A tree of `n` beliefs (fan-out 4) under one root, written in bulk as the owner, with its events,
 * plus effects on some leaves: PENDING ones to be cancelled and EXECUTED refunds to be reversed.
 */
async function seedTree(
  t: TestDb,
  tag: string,
  n: number,
  agentId: string,
): Promise<{ rootId: string; effects: number }> {
  const db = t.store.db;
  await db.transaction().execute(async (tx) => {
    await sql`SET LOCAL row_security = off`.execute(tx);
    const vec = `[${Array.from({ length: 512 }, (_, i) => (i === 0 ? 1 : 0)).join(',')}]`;
    await sql`INSERT INTO claims (fleet_id, key) SELECT 'crash', ${`t${tag}:`} || g FROM generate_series(0, ${n - 1}) g`.execute(
      tx,
    );
    await sql`INSERT INTO beliefs (fleet_id, claim_key, statement, value, author_id, grounded, embedding)
      SELECT 'crash', ${`t${tag}:`} || g, 'node ' || g, 'true', ${agentId}, g = 0, ${vec}::vector FROM generate_series(0, ${n - 1}) g`.execute(
      tx,
    );
    await sql`CREATE TEMP TABLE ids ON COMMIT DROP AS SELECT split_part(claim_key, ':', 2)::int AS g, id FROM beliefs WHERE claim_key LIKE ${`t${tag}:%`}`.execute(
      tx,
    );
    await sql`CREATE INDEX ON ids (g)`.execute(tx);
    await sql`INSERT INTO justifications (fleet_id, belief_id, created_by) SELECT 'crash', id, ${agentId} FROM ids WHERE g > 0`.execute(
      tx,
    );
    await sql`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
      SELECT j.id, p.id, 'crash' FROM justifications j JOIN ids c ON c.id = j.belief_id JOIN ids p ON p.g = (c.g - 1) / 4`.execute(
      tx,
    );
    await sql`INSERT INTO events (fleet_id, type, ids) SELECT 'crash', 'BeliefAsserted', array_agg(id) FROM ids`.execute(
      tx,
    );
    await sql`INSERT INTO effects (fleet_id, kind, status, amount_minor, currency, idempotency_key, proposed_by, external_ref, executed_at)
      SELECT 'crash', 'refund', CASE WHEN g % 2 = 0 THEN 'PENDING' ELSE 'EXECUTED' END, 1000 + g, 'USD', ${`t${tag}-e`} || g, ${agentId},
             CASE WHEN g % 2 = 0 THEN NULL ELSE 'bank-' || g END, CASE WHEN g % 2 = 0 THEN NULL ELSE now() END
        FROM generate_series(1, 40) g`.execute(tx);
    await sql`INSERT INTO effect_supports (effect_id, belief_id, fleet_id)
      SELECT e.id, i.id, 'crash' FROM effects e JOIN ids i ON i.g = ${n - 1} - split_part(e.idempotency_key, '-e', 2)::int
       WHERE e.idempotency_key LIKE ${`t${tag}-e%`}`.execute(tx);
    await sql`INSERT INTO events (fleet_id, type, ids) SELECT 'crash', 'EffectProposed', array_agg(id) FROM effects WHERE idempotency_key LIKE ${`t${tag}-e%`}`.execute(
      tx,
    );
  });
  // A bulk load is analyzed before use, as any PostgreSQL bulk load should be: planning a cascade over
  // tables the planner believes empty is the slow path (src/retraction/cascade.ts), not what this drill measures.
  await sql`ANALYZE beliefs, justifications, justification_premises, effects, effect_supports, events`.execute(db);
  const root = await sql<{ id: string }>`SELECT id::text FROM beliefs WHERE claim_key = ${`t${tag}:0`}`.execute(db);
  return { rootId: root.rows[0]!.id, effects: 40 };
}

/** Kills the server with SIGKILL in the middle of large cascades, restarts it, and checks all-or-nothing and lossless resume. */
describe.runIf(!!process.env.RETRACT_TEST_DATABASE_URL)('crash recovery of a large cascade on PostgreSQL', () => {
  let t: TestDb;
  let agentId: string;
  beforeAll(async () => {
    t = await testStore('postgres');
    // The vector index plays no part in a cascade; dropping it in this scratch database makes seeding 100k beliefs fast.
    await sql`DROP INDEX IF EXISTS beliefs_embedding`.execute(t.store.db);
    const a = await createAgentDirect(t.store, { fleet: 'crash', name: 'crasher', scopes: SCOPES });
    agentId = a.agent.id;
    await sql`INSERT INTO effect_kinds (fleet_id, kind, reversible) VALUES ('crash', 'refund', true)`.execute(
      t.store.db,
    );
  });
  afterAll(async () => t?.close());

  it(`SIGKILL at ${KILLS} varied moments of ${SIZE}-belief cascades: all or nothing, no reversal twice, subscribers resume without loss`, async () => {
    const report: Array<Record<string, unknown>> = [];
    let { child, base } = await startServer(t.url!);
    let tree = await seedTree(t, '0', SIZE, agentId);
    let treeNo = 0;
    // The operator belongs to fleet 'default'; it acts in 'crash' only through an agent of that fleet.
    const crashAgent = await createAgentDirect(t.store, { fleet: 'crash', name: 'crash-api', scopes: SCOPES });
    // Calibrate: how long one cascade of this size takes here, to spread the kills across it and past its commit.
    const probe = await seedTree(t, 'probe', SIZE, agentId);
    const t0 = Date.now();
    const pr = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${crashAgent.token}` },
      body: JSON.stringify({
        query: 'mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }',
        variables: { i: { beliefId: gid('Belief', probe.rootId), reason: 'probe' } },
      }),
    });
    expect(pr.status).toBe(200);
    expect(((await pr.json()) as { data?: { retractBelief?: { id: string } } }).data?.retractBelief?.id).toBeTruthy();
    const cascadeMs = Date.now() - t0;
    for (let i = 0; i < KILLS; i++) {
      // Spread the kills from early in the cascade to well past its commit (while events stream).
      const delay = Math.round((0.2 + (KILLS === 1 ? 1 : i / (KILLS - 1)) * 2.8) * cascadeMs);
      const root = tree.rootId;
      // A subscriber of the fleet, from now.
      const seen: Array<{ cursor: string; __typename: string; retraction: { id: string } }> = [];
      const ws = createClient({
        url: `${base.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${crashAgent.token}` },
        retryAttempts: 0,
        lazy: false,
        on: { error: () => {} },
      });
      await new Promise<void>((resolve) => {
        ws.on('connected', () => resolve());
      });
      ws.subscribe(
        { query: 'subscription { retractionEvents { __typename cursor retraction { id } } }' },
        {
          next: (m) => seen.push((m.data as { retractionEvents: (typeof seen)[number] }).retractionEvents),
          error: () => {},
          complete: () => {},
        },
      );
      await new Promise((r) => setTimeout(r, 300));
      fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${crashAgent.token}` },
        body: JSON.stringify({
          query: 'mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }',
          variables: { i: { beliefId: gid('Belief', root), reason: `crash ${i}` } },
        }),
      }).catch(() => {});
      await new Promise((r) => setTimeout(r, delay));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      await ws.dispose();
      ({ child, base } = await startServer(t.url!));

      // All or nothing.
      const state = (
        await sql<{ status: string; rid: string | null; carried: number; counted: number | null }>`
        SELECT b.status, b.retraction_id::text AS rid,
               (SELECT count(*)::int FROM beliefs x WHERE x.retraction_id = b.retraction_id) AS carried,
               (SELECT beliefs_retracted FROM retractions r WHERE r.id = b.retraction_id) AS counted
          FROM beliefs b WHERE b.id = ${root}`.execute(t.store.db)
      ).rows[0]!;
      const committed = state.status === 'RETRACTED';
      if (committed) expect([state.carried, state.counted]).toEqual([SIZE, SIZE]);
      else expect(state.rid).toBeNull();
      const partial = await sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM beliefs WHERE claim_key LIKE ${`t${treeNo}:%`} AND status = 'RETRACTED'`.execute(
        t.store.db,
      );
      expect(partial.rows[0]!.n).toBe(committed ? SIZE : 0);

      // Resume the subscriber from its last cursor: it must end with exactly this retraction's events, once each.
      let resumed = 0;
      if (committed) {
        const expected = (
          await sql<{ n: number }>`
          SELECT (SELECT coalesce(sum(cardinality(ids)), 0)::int FROM events WHERE retraction_id = ${state.rid} AND type IN ('BeliefRetracted', 'EffectCancelled', 'ReversalRecorded'))
                 + (SELECT count(*)::int FROM events WHERE retraction_id = ${state.rid} AND type IN ('RetractionStarted', 'RetractionCommitted')) AS n`.execute(
            t.store.db,
          )
        ).rows[0]!.n;
        const mine = seen.filter((e) => e.retraction.id === gid('Retraction', state.rid!));
        const after = seen.length ? seen[seen.length - 1]!.cursor : null;
        const got: typeof seen = [];
        const ws2 = createClient({
          url: `${base.replace('http', 'ws')}/graphql`,
          webSocketImpl: WebSocket,
          connectionParams: { authorization: `Bearer ${crashAgent.token}` },
          retryAttempts: 0,
          on: { error: () => {} },
        });
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`resume got ${got.length + mine.length}/${expected}`)),
            120_000,
          );
          // Done once every event of the retraction is in hand; then linger briefly so a duplicate would show.
          const check = () => {
            if (mine.length + got.length >= expected) {
              clearTimeout(timer);
              setTimeout(resolve, 500);
            }
          };
          ws2.subscribe(
            {
              query: 'subscription($a: String) { retractionEvents(after: $a) { __typename cursor retraction { id } } }',
              variables: { a: after ?? encodeStart() },
            },
            {
              next: (m) => {
                const e = (m.data as { retractionEvents: (typeof seen)[number] }).retractionEvents;
                if (e.retraction.id === gid('Retraction', state.rid!)) {
                  got.push(e);
                  check();
                }
              },
              error: reject,
              complete: () => {},
            },
          );
          check();
        });
        await ws2.dispose();
        const all = [...mine, ...got];
        expect(new Set(all.map((e) => e.cursor)).size).toBe(all.length);
        expect(all.length).toBe(expected);
        resumed = got.length;
      }
      const reversalsTwice = await sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM (SELECT effect_id FROM reversals GROUP BY effect_id HAVING count(*) > 1) d`.execute(
        t.store.db,
      );
      expect(reversalsTwice.rows[0]!.n).toBe(0);
      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(200);
      report.push({ kill: i, delayMs: delay, committed, seenBeforeKill: seen.length, resumed });
      if (committed) {
        treeNo++;
        tree = await seedTree(t, String(treeNo), SIZE, agentId);
      }
    }
    child.kill('SIGKILL');
    const violations = await checkInvariants(t.store);
    fs.mkdirSync('results', { recursive: true });
    fs.writeFileSync(
      'results/crash.json',
      JSON.stringify(
        { at: new Date().toISOString(), size: SIZE, kills: KILLS, cascadeMs, report, violations },
        null,
        2,
      ),
    );
    console.log(
      `crash: ${KILLS} SIGKILLs during ${SIZE}-belief cascades (one takes ${cascadeMs} ms here): ` +
        `${report.filter((r) => r.committed).length} had committed, ${report.filter((r) => !r.committed).length} rolled back whole; violations ${violations.length}`,
    );
    expect(violations).toEqual([]);
    expect(report.some((r) => r.committed) || KILLS < 3).toBe(true);
  }, 3_600_000);
});

function encodeStart(): string {
  return Buffer.from('e1:0:0:-1').toString('base64url');
}
