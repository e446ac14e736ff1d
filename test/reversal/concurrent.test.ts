import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/store/engine';
import type { ReversalProvider } from '../../src/reversal/provider';
import { runDispatcher, type DispatcherStats } from '../../src/reversal/dispatcher';
import { actorIn, coreOf, expectInvariants, testStore, type TestDb } from '../support/engines';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider';
import {
  allReversals,
  eventually,
  fastProvider,
  keysByReversal,
  owedReversals,
  settledMinor,
} from '../support/dispatch-fixtures';

/**
 * Two dispatchers at once against one PostgreSQL database (two stores, two connection pools), with leases short
 * enough that sends outlive them: takes overlap, re-sends race the first send, and late outcomes arrive after a
 * takeover. PGlite is one connection, so this runs on PostgreSQL only.
 */
describe.skipIf(!process.env.RETRACT_TEST_DATABASE_URL)('two dispatchers at once on postgres', () => {
  let t: TestDb;
  let second: Store;
  let fake: FakeProvider;
  beforeAll(async () => {
    t = await testStore('postgres');
    second = await openStore({ databaseUrl: t.url!, migrate: false });
    fake = await startFakeProvider();
  });
  afterAll(async () => {
    await fake?.close();
    await second?.close();
    await t?.close();
  });

  it("no reversal is sent under two keys, each is paid exactly once and CONFIRMED once with the provider's reference", async () => {
    const core = coreOf(t.store);
    const acme = await actorIn(t.store, 'acme');
    const globex = await actorIn(t.store, 'globex');
    const a = await owedReversals(core, acme, 24, { prefix: 'cc-a', amount: (i) => 700 + 31 * i });
    const g = await owedReversals(core, globex, 24, { prefix: 'cc-g', amount: (i) => 2_000 + 5 * i });
    const all = [...a.reversals, ...g.reversals];
    all.forEach((r, i) => {
      // Paid at once, answered after the lease has run out: the other dispatcher takes over and re-sends.
      if (i % 4 === 0) fake.script(r.key, { kind: 'stall', ms: 450 });
      if (i % 6 === 1) fake.script(r.key, 'accept-then-drop');
      if (i % 5 === 2) fake.script(r.key, '500');
    });

    // A dispatcher that stalls after its first send of these (a GC pause, a slow host) records after its lease was
    // taken over: its confirmation must land as a harmless duplicate, or first, never as a second reference.
    const slow = new Set([all[3]!.key, all[39]!.key]);
    const slowed = new Set<string>();
    const slowpoke = (inner: ReversalProvider): ReversalProvider => ({
      id: inner.id,
      async send(req, o) {
        const out = await inner.send(req, o);
        if (slow.has(req.idempotencyKey) && !slowed.has(req.idempotencyKey)) {
          slowed.add(req.idempotencyKey);
          await new Promise((r) => setTimeout(r, 2000));
        }
        return out;
      },
    });

    const stop = new AbortController();
    const common = { leaseMs: 300, batch: 4, pollMs: 20, graceMs: 200, resendWindowMs: 60_000, signal: stop.signal };
    const runs: Array<Promise<DispatcherStats>> = [
      runDispatcher({ ...common, core, provider: slowpoke(fastProvider(fake, { timeoutMs: 1000 })), holder: 'A' }),
      runDispatcher({
        ...common,
        core: coreOf(second),
        provider: slowpoke(fastProvider(fake, { timeoutMs: 1000 })),
        holder: 'B',
      }),
    ];
    try {
      await eventually(
        async () => (await allReversals(t.store)).every((r) => r.status === 'CONFIRMED'),
        60_000,
        'all CONFIRMED',
      );
    } finally {
      stop.abort();
    }
    const [sa, sb] = await Promise.all(runs);

    const rows = await allReversals(t.store);
    const byReversal = keysByReversal(fake);
    for (const r of rows) {
      expect(r.provider_ref).toBe(fake.payments.get(r.idempotency_key)!.reference);
      expect([...byReversal.get(r.id)!]).toEqual([r.idempotency_key]);
    }
    expect(fake.payments.size).toBe(all.length);
    expect(new Set([...fake.payments.values()].map((p) => (p.body as { reversalId: string }).reversalId)).size).toBe(
      all.length,
    );
    const confirmedEvents = await sql<{ id: string; n: number }>`
      SELECT unnest(ids)::text AS id, count(*)::int AS n FROM events WHERE type = 'ReversalConfirmed' GROUP BY 1`.execute(
      t.store.db,
    );
    expect(confirmedEvents.rows).toHaveLength(all.length);
    expect(confirmedEvents.rows.every((e) => e.n === 1)).toBe(true);

    // The race was real: both worked, leases were taken over, and some sends went out more than once.
    expect(sa!.taken).toBeGreaterThan(0);
    expect(sb!.taken).toBeGreaterThan(0);
    expect(rows.some((r) => r.attempts > 1)).toBe(true);
    expect(all.filter((r) => fake.deliveries(r.key) > 1).length).toBeGreaterThan(0);
    expect(sa!.conflicts + sb!.conflicts).toBe(0);
    expect(sa!.duplicates + sb!.duplicates).toBeGreaterThanOrEqual(slow.size);
    for (const k of slow) expect(fake.deliveries(k)).toBeGreaterThanOrEqual(2);

    const settled = await settledMinor(t.store, [
      { fleet: 'acme', retractionId: a.retractionId },
      { fleet: 'globex', retractionId: g.retractionId },
    ]);
    expect(settled).toBe(fake.settledMinor('USD'));
    expect(settled).toBe(all.reduce((n, r) => n + r.amountMinor, 0));
    await expectInvariants(t.store);
    console.log(
      `two dispatchers: A ${JSON.stringify(sa)} B ${JSON.stringify(sb)}; deliveries ${fake.requests.length} for ${all.length} reversals`,
    );
  }, 120_000);
});
