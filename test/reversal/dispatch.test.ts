import { afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Core } from '../../src/core';
import { DomainError } from '../../src/errors/domain-error';
import {
  confirmFromProvider,
  dispatchableFleets,
  recordOutcome,
  stuckReversals,
  takeOwedReversals,
} from '../../src/reversal/dispatch.service';
import type { ReversalProvider } from '../../src/reversal/provider';
import { type DispatcherOptions, type DispatcherStats, requestOf, runDispatcher } from '../../src/reversal/dispatcher';
import type { WorkerLogger } from '../../src/kernel/worker-logger';
import { inTx } from '../../src/store/tx';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { actorIn, engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider';
import { passportStory } from '../support/story';
import {
  allReversals,
  eventsFor,
  eventually,
  fastProvider,
  owedReversals,
  reversalState,
  settledMinor,
} from '../support/dispatch-fixtures';

function recordingLogger() {
  const lines: Array<{ level: string; obj: object; msg?: string }> = [];
  const at = (level: string) => (obj: object, msg?: string) => {
    lines.push({ level, obj, ...(msg !== undefined ? { msg } : {}) });
  };
  const logger: WorkerLogger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

/** Runs one dispatcher until `done` holds, then stops it and returns its stats. */
async function dispatchUntil(
  core: Core,
  provider: ReversalProvider,
  done: () => Promise<boolean>,
  opts: Partial<DispatcherOptions> = {},
): Promise<DispatcherStats> {
  const stop = new AbortController();
  const run = runDispatcher({
    core,
    provider,
    holder: 'test-dispatcher',
    leaseMs: 5000,
    batch: 5,
    pollMs: 20,
    graceMs: 100,
    signal: stop.signal,
    ...opts,
  });
  let failure: unknown = null;
  run.catch((e) => {
    failure = e;
  });
  try {
    await eventually(async () => {
      if (failure) throw failure;
      return done();
    });
  } finally {
    stop.abort();
  }
  return run;
}

describe.each(engines())('reversal dispatch on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let fake: FakeProvider;
  storeSuite(engine, { each: true }, async (s) => {
    ({ t, core } = s);
    fake = await startFakeProvider();
  });
  afterEach(async () => fake?.close());

  const statusIs = (id: string, status: string) => async () => (await reversalState(t.store, id)).status === status;

  it("OWED → CONFIRMED under the provider's own reference; the unreachable one is never sent; settled equals what the provider paid", async () => {
    const actor = await actorIn(t.store, 'acme');
    const s = await passportStory(core, actor);
    const { retractionId } = await import('../../src/retraction/retraction.service').then((m) =>
      m.retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged passport' }),
    );
    const [refundRev, chargeRev] = await allReversals(t.store);
    expect(refundRev).toMatchObject({ status: 'OWED', idempotency_key: 'reversal:customer:4411:refund-1' });
    expect(chargeRev).toMatchObject({ status: 'UNREACHABLE' });

    const stats = await dispatchUntil(core, fastProvider(fake), statusIs(refundRev!.id, 'CONFIRMED'));
    const after = await reversalState(t.store, refundRev!.id);
    const paid = fake.payments.get(refundRev!.idempotency_key)!;
    expect(after.provider_ref).toBe(paid.reference);
    expect(after.provider_ref).toMatch(/^prv_/);
    expect(after.attempts).toBe(1);
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.body).toEqual({
      reversalId: refundRev!.id,
      effectId: s.refund.id,
      effectKind: 'refund',
      originalReference: 'bank-ref-1',
      amount: { amountMinor: 124_000, currency: 'USD' },
      payload: null,
    });
    expect(stats).toMatchObject({ confirmed: 1, failed: 0, stale: 0, conflicts: 0 });
    expect((await eventsFor(t.store, refundRev!.id)).map((e) => e.type)).toEqual([
      'ReversalRecorded',
      'ReversalDispatched',
      'ReversalConfirmed',
    ]);

    const totals = await inTx(t.store, { fleet: 'acme', readOnly: true }, (tx) => totalsFor(tx, 'acme', retractionId));
    expect(totals.settled).toEqual([{ amountMinor: '124000', currency: 'USD' }]);
    expect(fake.settledMinor('USD')).toBe(124_000);
    expect((await reversalState(t.store, chargeRev!.id)).status).toBe('UNREACHABLE');
    await expectInvariants(t.store);
  });

  it("a 4xx refusal → FAILED with the provider's reason, a ReversalFailed event, nothing paid, and no re-send", async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1);
    fake.script(r!.key, { kind: 'fail', status: 400, reason: 'account closed' });
    await dispatchUntil(core, fastProvider(fake), statusIs(r!.id, 'FAILED'));
    const row = await reversalState(t.store, r!.id);
    expect(row.reason).toContain('HTTP 400');
    expect(row.reason).toContain('account closed');
    expect(row.provider_ref).toBeNull();
    const failed = await eventsFor(t.store, r!.id, 'ReversalFailed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data).toMatchObject({ reason: row.reason, attempt: 1 });
    expect(fake.payments.size).toBe(0);
    expect(fake.deliveries(r!.key)).toBe(1);
    // A FAILED reversal is left for an operator: it is nobody's work any more, and never taken again.
    expect(await dispatchableFleets(core)).toEqual([]);
    expect(await takeOwedReversals(core, 'acme', { limit: 10, leaseMs: 100, holder: 'x' })).toEqual([]);
    expect(await reversalState(t.store, r!.id)).toMatchObject({ status: 'FAILED', attempts: 1 });
    await expectInvariants(t.store);
  });

  it('5xx, 5xx, then 2xx: confirmed under the one key, paid once', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1);
    fake.script(r!.key, '500', { kind: 'status', status: 503, retryAfter: 0 });
    await dispatchUntil(core, fastProvider(fake), statusIs(r!.id, 'CONFIRMED'));
    expect(fake.deliveries(r!.key)).toBe(3);
    expect(new Set(fake.requests.map((q) => q.key))).toEqual(new Set([r!.key]));
    expect(fake.payments.size).toBe(1);
    expect((await reversalState(t.store, r!.id)).provider_ref).toBe(fake.payments.get(r!.key)!.reference);
    await expectInvariants(t.store);
  });

  it('a timeout (the provider recorded the payment but answered too late), then 2xx: the replayed reference, paid once', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1);
    fake.script(r!.key, { kind: 'stall', ms: 4000 });
    await dispatchUntil(core, fastProvider(fake, { timeoutMs: 400 }), statusIs(r!.id, 'CONFIRMED'));
    expect(fake.deliveries(r!.key)).toBeGreaterThanOrEqual(2);
    expect(fake.payments.size).toBe(1);
    expect((await reversalState(t.store, r!.id)).provider_ref).toBe(fake.payments.get(r!.key)!.reference);
    await expectInvariants(t.store);
  });

  it('duplicate delivery (accepted, then the connection dropped; then a second dispatcher sends it again) → paid once, confirmed once', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1);
    fake.script(r!.key, 'accept-then-drop');
    await dispatchUntil(core, fastProvider(fake), statusIs(r!.id, 'CONFIRMED'));
    expect(fake.deliveries(r!.key)).toBe(2);
    const ref = fake.payments.get(r!.key)!.reference;
    // The very same request once more, as a worker whose lease had been taken over would send it.
    const first = fake.requests[0]!.body as {
      reversalId: string;
      effectId: string;
      effectKind: string;
      originalReference: string | null;
      amount: { amountMinor: number; currency: string };
      payload: unknown;
    };
    const again = await fastProvider(fake).send({
      idempotencyKey: r!.key,
      reversalId: first.reversalId,
      effectId: first.effectId,
      effectKind: first.effectKind,
      effectExternalRef: first.originalReference,
      amount: first.amount,
      payload: first.payload,
    });
    expect(again).toEqual({ outcome: 'confirmed', providerRef: ref });
    expect(await recordOutcome(core, 'acme', r!.id, again, { holder: 'late', attempt: 1 })).toMatchObject({
      applied: false,
      why: 'duplicate',
    });
    expect(fake.payments.size).toBe(1);
    expect(await eventsFor(t.store, r!.id, 'ReversalConfirmed')).toHaveLength(1);
    await expectInvariants(t.store);
  });

  it('an inconclusive send (retry_later) stays DISPATCHED with its reason, and is re-sent under the same key once the lease expires', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1);
    fake.script(r!.key, '500', '500');
    const provider = fastProvider(fake, { maxAttempts: 2 });
    const [item] = await takeOwedReversals(core, 'acme', { limit: 1, leaseMs: 1000, holder: 'w1' });
    const out = await provider.send(requestOf(item!));
    expect(out.outcome).toBe('retry_later');
    expect(await recordOutcome(core, 'acme', item!.id, out, item!.lease)).toMatchObject({
      applied: true,
      status: 'DISPATCHED',
    });
    const mid = await reversalState(t.store, r!.id);
    expect(mid).toMatchObject({ status: 'DISPATCHED', attempts: 1, lease_holder: 'w1' });
    expect(mid.last_error).toContain('HTTP 500');
    // Under its live lease nobody else takes it.
    expect(await takeOwedReversals(core, 'acme', { limit: 1, leaseMs: 150, holder: 'w2' })).toEqual([]);
    await new Promise((res) => setTimeout(res, 1100));
    await dispatchUntil(core, provider, statusIs(r!.id, 'CONFIRMED'));
    expect(fake.deliveries(r!.key)).toBe(3);
    expect((await reversalState(t.store, r!.id)).attempts).toBe(2);
    expect(fake.payments.size).toBe(1);
    await expectInvariants(t.store);
  });

  it('lease expiry re-sends a DISPATCHED reversal whose worker died after sending: same key, the provider pays once, its reference is kept', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1);
    const [ghost] = await takeOwedReversals(core, actor, { limit: 5, leaseMs: 100, holder: 'ghost' });
    expect(ghost).toMatchObject({
      id: r!.id,
      idempotencyKey: r!.key,
      attempts: 1,
      lease: { holder: 'ghost', attempt: 1 },
    });
    const firstSend = await fastProvider(fake).send(requestOf(ghost!));
    expect(firstSend.outcome).toBe('confirmed');
    // …and the ghost dies before recording. Its lease runs out; a live dispatcher takes over.
    await new Promise((res) => setTimeout(res, 150));
    await dispatchUntil(core, fastProvider(fake), statusIs(r!.id, 'CONFIRMED'));
    const row = await reversalState(t.store, r!.id);
    expect(fake.deliveries(r!.key)).toBe(2);
    expect(fake.payments.size).toBe(1);
    expect(row).toMatchObject({ attempts: 2, provider_ref: (firstSend as { providerRef: string }).providerRef });

    // The ghost's late words: a refusal is fenced off; its confirmation (same reference) is a no-op; a different
    // reference means the provider paid twice, and is refused loudly.
    expect(await recordOutcome(core, 'acme', r!.id, { outcome: 'failed', reason: 'late' }, ghost!.lease)).toMatchObject(
      { applied: false, why: 'stale-lease' },
    );
    expect(await recordOutcome(core, 'acme', r!.id, firstSend, ghost!.lease)).toMatchObject({
      applied: false,
      why: 'duplicate',
    });
    await expect(
      recordOutcome(core, 'acme', r!.id, { outcome: 'confirmed', providerRef: 'prv_other' }, ghost!.lease),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await reversalState(t.store, r!.id)).toMatchObject({ status: 'CONFIRMED', provider_ref: row.provider_ref });
    await expectInvariants(t.store);
  });

  it('fencing: only the current lease records FAILED or retry notes; a confirmation from any send is accepted, even over FAILED', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r],
    } = await owedReversals(core, actor, 1);
    const [a] = await takeOwedReversals(core, 'acme', { limit: 1, leaseMs: 100, holder: 'A' });
    await new Promise((res) => setTimeout(res, 150));
    const [b] = await takeOwedReversals(core, 'acme', { limit: 1, leaseMs: 60_000, holder: 'B' });
    expect(b).toMatchObject({ id: r!.id, lease: { holder: 'B', attempt: 2 } });
    expect(b!.dispatchedAt.getTime()).toBe(a!.dispatchedAt.getTime()); // first dispatch is kept

    expect(
      await recordOutcome(core, 'acme', r!.id, { outcome: 'failed', reason: 'A says no' }, a!.lease),
    ).toMatchObject({ applied: false, why: 'stale-lease' });
    expect(
      await recordOutcome(core, 'acme', r!.id, { outcome: 'retry_later', reason: 'A unsure' }, a!.lease),
    ).toMatchObject({ applied: false, why: 'stale-lease' });
    // Same attempt number, other holder: still not the lease.
    expect(
      await recordOutcome(core, 'acme', r!.id, { outcome: 'failed', reason: 'forged' }, { holder: 'C', attempt: 2 }),
    ).toMatchObject({ applied: false, why: 'stale-lease' });
    expect((await reversalState(t.store, r!.id)).last_error).toBeNull();
    expect(
      await recordOutcome(core, 'acme', r!.id, { outcome: 'retry_later', reason: 'B unsure' }, b!.lease),
    ).toMatchObject({ applied: true, status: 'DISPATCHED' });
    expect(
      await recordOutcome(core, 'acme', r!.id, { outcome: 'failed', reason: 'B says no' }, b!.lease),
    ).toMatchObject({ applied: true, status: 'FAILED' });
    expect(await reversalState(t.store, r!.id)).toMatchObject({ status: 'FAILED', reason: 'B says no' });
    // A's send had gone through after all: the money moved, so the provider's reference wins.
    const late = await recordOutcome(
      core,
      'acme',
      r!.id,
      { outcome: 'confirmed', providerRef: 'prv_late_ok' },
      a!.lease,
    );
    expect(late).toMatchObject({ applied: true, status: 'CONFIRMED' });
    expect((await eventsFor(t.store, r!.id, 'ReversalConfirmed'))[0]!.data).toMatchObject({
      providerRef: 'prv_late_ok',
      previousStatus: 'FAILED',
    });
    // Once CONFIRMED, another reference is a conflict, whoever reports it.
    await expect(
      recordOutcome(core, 'acme', r!.id, { outcome: 'confirmed', providerRef: 'prv_second' }, b!.lease),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    await expectInvariants(t.store);
  });

  it("a reference echoing our own key is refused; an UNREACHABLE reversal cannot be confirmed; another fleet's reversal is not found", async () => {
    const actor = await actorIn(t.store, 'acme');
    const s = await passportStory(core, actor);
    const { retractBelief } = await import('../../src/retraction/retraction.service');
    await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    const [owed, unreachable] = await allReversals(t.store);
    const [item] = await takeOwedReversals(core, 'acme', { limit: 1, leaseMs: 60_000, holder: 'h' });
    await expect(
      recordOutcome(core, 'acme', owed!.id, { outcome: 'confirmed', providerRef: owed!.idempotency_key }, item!.lease),
    ).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    await expect(confirmFromProvider(core, 'acme', unreachable!.id, 'prv_x')).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expect(
      recordOutcome(core, 'globex', owed!.id, { outcome: 'confirmed', providerRef: 'prv_y' }, item!.lease),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(takeOwedReversals(core, 'acme', { limit: 0, leaseMs: 1, holder: 'h' })).rejects.toBeInstanceOf(
      DomainError,
    );
    expect((await reversalState(t.store, owed!.id)).status).toBe('DISPATCHED');
    await expectInvariants(t.store);
  });

  it("one dispatcher serves every fleet; settled (totalsFor) equals the fake provider's own sum, refusals excluded", async () => {
    const acme = await actorIn(t.store, 'acme');
    const globex = await actorIn(t.store, 'globex');
    const a = await owedReversals(core, acme, 6, { prefix: 'a', amount: (i) => 500 + 101 * i });
    const g = await owedReversals(core, globex, 6, { prefix: 'g', amount: (i) => 9_000 + 13 * i });
    fake.script(a.reversals[1]!.key, 'fail');
    fake.script(g.reversals[2]!.key, '500');
    fake.script(g.reversals[3]!.key, 'accept-then-drop');
    fake.script(a.reversals[4]!.key, { kind: 'stall', ms: 1000 });
    const before = await dispatchableFleets(core);
    expect(before).toEqual([
      { fleetId: 'acme', ready: 6, stuck: 0 },
      { fleetId: 'globex', ready: 6, stuck: 0 },
    ]);
    await dispatchUntil(core, fastProvider(fake), async () =>
      (await allReversals(t.store)).every((r) => r.status === 'CONFIRMED' || r.status === 'FAILED'),
    );
    const rows = await allReversals(t.store);
    expect(rows.filter((r) => r.status === 'FAILED').map((r) => r.id)).toEqual([a.reversals[1]!.id]);
    for (const r of rows.filter((x) => x.status === 'CONFIRMED')) {
      expect(r.provider_ref).toBe(fake.payments.get(r.idempotency_key)!.reference);
    }
    const settled = await settledMinor(t.store, [
      { fleet: 'acme', retractionId: a.retractionId },
      { fleet: 'globex', retractionId: g.retractionId },
    ]);
    expect(fake.payments.size).toBe(11);
    expect(settled).toBe(fake.settledMinor('USD'));
    expect(settled).toBe(
      [...a.reversals, ...g.reversals].reduce((n, r) => n + r.amountMinor, 0) - a.reversals[1]!.amountMinor,
    );
    expect(await dispatchableFleets(core)).toEqual([]);
    await expectInvariants(t.store);
  });

  it('past the resend window a DISPATCHED reversal is not re-sent: it is reported stuck for an operator', async () => {
    const actor = await actorIn(t.store, 'acme');
    const {
      reversals: [r, r2],
    } = await owedReversals(core, actor, 2);
    await takeOwedReversals(core, 'acme', { limit: 1, leaseMs: 50, holder: 'gone' });
    await sql`UPDATE reversals SET dispatched_at = now() - interval '2 hours' WHERE id = ${r!.id}`.execute(t.store.db);
    await new Promise((res) => setTimeout(res, 100));
    const hour = 3600_000;
    expect(await dispatchableFleets(core, { resendWindowMs: hour })).toEqual([{ fleetId: 'acme', ready: 1, stuck: 1 }]);
    const { logger, lines } = recordingLogger();
    await dispatchUntil(core, fastProvider(fake), statusIs(r2!.id, 'CONFIRMED'), { resendWindowMs: hour, logger });
    expect(fake.deliveries(r!.key)).toBe(0);
    expect(await reversalState(t.store, r!.id)).toMatchObject({ status: 'DISPATCHED', attempts: 1 });
    expect((await stuckReversals(core, 'acme', { resendWindowMs: hour })).map((x) => x.id)).toEqual([r!.id]);
    expect(lines.some((l) => l.level === 'warn' && /stuck past the resend window/.test(l.msg ?? ''))).toBe(true);
    // Inside a wider window it is sent again (same key).
    await dispatchUntil(core, fastProvider(fake), statusIs(r!.id, 'CONFIRMED'), { resendWindowMs: 3 * hour });
    expect(fake.deliveries(r!.key)).toBe(1);
    await expectInvariants(t.store);
  });

  it('runDispatcher refuses a resend window that is not above twice the lease, and returns its stats on stop', async () => {
    const stop = new AbortController();
    await expect(
      runDispatcher({
        core,
        provider: fastProvider(fake),
        holder: 'h',
        leaseMs: 1000,
        batch: 1,
        pollMs: 10,
        signal: stop.signal,
        resendWindowMs: 2000,
      }),
    ).rejects.toThrow(/resendWindowMs/);
    stop.abort();
    const stats = await runDispatcher({
      core,
      provider: fastProvider(fake),
      holder: 'h',
      leaseMs: 1000,
      batch: 1,
      pollMs: 10,
      signal: stop.signal,
    });
    expect(stats).toMatchObject({ taken: 0, errors: 0 });
  });
});
