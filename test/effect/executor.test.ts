import { afterEach, describe, expect, it } from 'vitest';
import type { Core } from '../../src/core';
import { proposeEffect, registerEffectKind } from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { inTx } from '../../src/store/tx';
import { type EffectAdapter, type ExecutorStats, runExecutor } from '../../src/effect/executor';
import { httpExecutorAdapter } from '../../src/effect/http-executor';
import { runDispatcher } from '../../src/reversal/dispatcher';
import { actorIn, engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider';
import { belief } from '../support/story';
import { allReversals, eventually, fastProvider } from '../support/dispatch-fixtures';

describe.each(engines())('effect executor on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let fake: FakeProvider;
  storeSuite(engine, { each: true }, async (s) => {
    ({ t, core } = s);
    fake = await startFakeProvider();
  });
  afterEach(async () => fake?.close());

  const effects = (fleet: string) =>
    inTx(t.store, { fleet, readOnly: true }, (tx) =>
      tx
        .selectFrom('effects')
        .select(['id', 'kind', 'status', 'external_ref', 'failure_reason', 'idempotency_key'])
        .orderBy('id')
        .execute(),
    );

  async function executeUntil(
    opts: Parameters<typeof runExecutor>[0] extends infer O ? Omit<O & object, 'signal' | 'core' | 'pollMs'> : never,
    done: () => Promise<boolean>,
  ): Promise<ExecutorStats> {
    const stop = new AbortController();
    const run = runExecutor({ core, pollMs: 20, signal: stop.signal, retryDelayMs: 5, ...opts });
    try {
      await eventually(done);
    } finally {
      stop.abort();
    }
    return run;
  }

  it('claims each PENDING effect of its kinds, runs the adapter, records EXECUTED with the reference or FAILED with the reason; retries an adapter that throws', async () => {
    const actor = await actorIn(t.store, 'acme');
    for (const kind of ['refund', 'email', 'payout'])
      await registerEffectKind(core, actor, { kind, reversible: kind !== 'email' });
    const p = await belief(core, actor, 'exec/premise');
    const keys = ['e-ok', 'e-no', 'e-flaky', 'e-other'];
    const kinds = ['refund', 'refund', 'email', 'payout'];
    for (const [i, key] of keys.entries()) {
      await proposeEffect(core, actor, {
        kind: kinds[i]!,
        supportedBy: [p.id],
        idempotencyKey: key,
        amount: { amountMinor: 100 + i, currency: 'EUR' },
      });
    }
    const calls = new Map<string, number>();
    const refund: EffectAdapter = async (e) => {
      calls.set(e.idempotency_key, (calls.get(e.idempotency_key) ?? 0) + 1);
      return e.idempotency_key === 'e-no'
        ? { ok: false, reason: 'card expired' }
        : { ok: true, ref: `bank-${e.idempotency_key}` };
    };
    const email: EffectAdapter = async (e) => {
      const n = (calls.get(e.idempotency_key) ?? 0) + 1;
      calls.set(e.idempotency_key, n);
      if (n < 3) throw new Error('SMTP timeout');
      return { ok: true, ref: 'smtp-250-ok' };
    };
    const stats = await executeUntil(
      { actor, adapters: { refund, email } },
      async () =>
        (await effects('acme')).filter((e) => e.status !== 'PENDING' && e.status !== 'EXECUTING').length === 3,
    );
    const rows = await effects('acme');
    expect(rows.map((e) => [e.idempotency_key, e.status, e.external_ref ?? e.failure_reason])).toEqual([
      ['e-ok', 'EXECUTED', 'bank-e-ok'],
      ['e-no', 'FAILED', 'card expired'],
      ['e-flaky', 'EXECUTED', 'smtp-250-ok'],
      ['e-other', 'PENDING', null], // no adapter for payouts: never claimed
    ]);
    expect(Object.fromEntries(calls)).toEqual({ 'e-ok': 1, 'e-no': 1, 'e-flaky': 3 });
    expect(stats).toMatchObject({ claimed: 3, executed: 2, failed: 1, abandoned: 0 });
    await expectInvariants(t.store);
  });

  it('an adapter that never gives a definite outcome leaves the effect EXECUTING for an operator (it may have happened)', async () => {
    const actor = await actorIn(t.store, 'acme');
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    const p = await belief(core, actor, 'exec/p2');
    await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [p.id],
      idempotencyKey: 'hang',
      amount: { amountMinor: 1, currency: 'EUR' },
    });
    let n = 0;
    const stats = await executeUntil(
      {
        actor,
        maxAdapterAttempts: 3,
        adapters: {
          refund: async () => {
            n++;
            throw new Error('boom');
          },
        },
      },
      async () => n >= 3,
    );
    await eventually(async () => stats.abandoned === 1 || (await effects('acme'))[0]!.status === 'EXECUTING');
    expect(n).toBe(3);
    expect(stats.abandoned).toBe(1);
    expect((await effects('acme'))[0]).toMatchObject({ status: 'EXECUTING', external_ref: null });
    await expectInvariants(t.store);
  });

  it('end to end over HTTP: the executor pays through the HTTP adapter, the belief falls, the dispatcher reverses it, settled equals what came back', async () => {
    const actor = await actorIn(t.store, 'acme');
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    const p = await belief(core, actor, 'e2e/premise');
    await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [p.id],
      idempotencyKey: 'e2e-1',
      amount: { amountMinor: 4_200, currency: 'USD' },
      payload: { to: 'acct-1' },
    });
    await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [p.id],
      idempotencyKey: 'e2e-2',
      amount: { amountMinor: 800, currency: 'USD' },
    });
    fake.script('e2e-2', { kind: 'fail', status: 422, reason: 'account frozen' });
    fake.script('e2e-1', '500');
    const base = fake.url.replace(/\/reversals$/, '/execute');
    await executeUntil(
      { actor, adapters: { refund: httpExecutorAdapter({ baseUrl: base, timeoutMs: 3000 }) } },
      async () => (await effects('acme')).every((e) => e.status === 'EXECUTED' || e.status === 'FAILED'),
    );
    const [e1, e2] = await effects('acme');
    expect(e1).toMatchObject({ status: 'EXECUTED', external_ref: fake.payments.get('e2e-1')!.reference });
    expect(e2!.status).toBe('FAILED');
    expect(e2!.failure_reason).toContain('account frozen');
    const execReq = fake.requests.find((r) => r.key === 'e2e-1')!;
    expect(execReq.body).toEqual({
      effectId: e1!.id,
      kind: 'refund',
      amount: { amountMinor: 4_200, currency: 'USD' },
      payload: { to: 'acct-1' },
    });

    const { retractionId } = await retractBelief(core, actor, { beliefId: p.id, reason: 'premise was wrong' });
    const [rev] = await allReversals(t.store);
    expect(rev).toMatchObject({ status: 'OWED', idempotency_key: 'reversal:e2e-1' });
    const stop = new AbortController();
    const run = runDispatcher({
      core,
      provider: fastProvider(fake),
      holder: 'd',
      leaseMs: 2000,
      batch: 2,
      pollMs: 20,
      signal: stop.signal,
    });
    await eventually(async () => (await allReversals(t.store))[0]!.status === 'CONFIRMED');
    stop.abort();
    await run;
    const confirmed = (await allReversals(t.store))[0]!;
    expect(confirmed.provider_ref).toBe(fake.payments.get('reversal:e2e-1')!.reference);
    const { totalsFor } = await import('../../src/retraction/retraction.repository');
    const totals = await inTx(t.store, { fleet: 'acme', readOnly: true }, (tx) => totalsFor(tx, 'acme', retractionId));
    expect(totals.settled).toEqual([{ amountMinor: '4200', currency: 'USD' }]);
    expect(fake.payments.get('reversal:e2e-1')!.amount).toEqual({ amountMinor: 4_200, currency: 'USD' });
    await expectInvariants(t.store);
  });

  it('refuses adapters named by invalid kinds, and stops promptly on its signal', async () => {
    const actor = await actorIn(t.store, 'acme');
    const stop = new AbortController();
    await expect(
      runExecutor({
        core,
        actor,
        adapters: { 'Bad Kind': async () => ({ ok: true, ref: 'x' }) },
        pollMs: 10,
        signal: stop.signal,
      }),
    ).rejects.toThrow();
    await expect(runExecutor({ core, actor, adapters: {}, pollMs: 10, signal: stop.signal })).rejects.toThrow(
      /at least one adapter/,
    );
    const started = Date.now();
    const run = runExecutor({
      core,
      actor,
      adapters: { refund: async () => ({ ok: true, ref: 'x' }) },
      pollMs: 60_000,
      signal: stop.signal,
    });
    await new Promise((r) => setTimeout(r, 100));
    stop.abort();
    expect(await run).toMatchObject({ claimed: 0 });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
