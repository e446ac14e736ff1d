import { afterAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { engines, expectInvariants, type TestDb } from '../support/engines';
import { belief, executed, proposed, passportStory } from '../support/story';
import {
  claimEffect,
  completeEffect,
  failEffect,
  proposeEffect,
  registerEffectKind,
} from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import type { Actor, Core } from '../../src/core';
import { domainError, dump, expectUnchanged, read, closeFileStores, storeSuite } from '../support/helpers';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { reversalKey } from '../../src/reversal/reversal.repository';
import { gid } from '../../src/kernel/ids';

/** Effects racing retractions, idempotent proposals and retractions, and at most one reversal per effect. */
afterAll(closeFileStores);

/** Effects racing retractions, and proposals that must not be written. */
describe.each(engines())('effects on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  storeSuite(
    engine,
    {
      shared: true,
      fleet: 'fx',
      kinds: [
        { kind: 'refund', reversible: true },
        { kind: 'email', reversible: false },
      ],
    },
    (s) => ({ t, core, actor } = s),
  );

  const effect = (id: string) =>
    read(t.store, 'fx', (tx) => tx.selectFrom('effects').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
  const reversalsOf = (id: string) =>
    read(t.store, 'fx', (tx) => tx.selectFrom('reversals').selectAll().where('effect_id', '=', id).execute());

  for (const [kind, status] of [
    ['refund', 'OWED'],
    ['email', 'UNREACHABLE'],
  ] as const) {
    it(`an EXECUTING ${kind} reached by a retraction is marked, not cancelled; completing it records one ${status} reversal in the same transaction, however often it is repeated`, async () => {
      const p = await belief(core, actor, `race-${kind}/p`);
      const d = await belief(core, actor, `race-${kind}/d`, [p]);
      const e = await proposed(core, actor, kind, [d], `race-${kind}:1`, 5_000);
      const running = await claimEffect(core, actor, { kinds: [kind] });
      expect(running).toMatchObject({ id: e.id, status: 'EXECUTING' });

      const { retractionId } = await retractBelief(core, actor, { beliefId: p.id, reason: 'p was false' });
      expect(await effect(e.id)).toMatchObject({ status: 'EXECUTING', reached_by: retractionId, cancelled_by: null });
      expect(await reversalsOf(e.id)).toEqual([]);
      await expectInvariants(t.store);

      const done = await completeEffect(core, actor, { effectId: e.id, externalRef: `ext-${kind}` });
      expect(done).toMatchObject({ status: 'EXECUTED', external_ref: `ext-${kind}`, reached_by: retractionId });
      const revs = await reversalsOf(e.id);
      expect(revs).toHaveLength(1);
      expect(revs[0]).toMatchObject({
        status,
        retraction_id: retractionId,
        idempotency_key: `reversal:race-${kind}:1`,
        amount_minor: '5000',
        currency: 'USD',
      });
      // EffectExecuted and ReversalRecorded were written by one transaction.
      const ev = (
        await read(t.store, 'fx', (tx) =>
          sql<{ type: string; tx: string; retraction_id: string | null }>`
        SELECT type, tx::text AS tx, retraction_id::text AS retraction_id FROM events
         WHERE (type = 'EffectExecuted' AND ${e.id}::bigint = ANY(ids)) OR (type = 'ReversalRecorded' AND ${revs[0]!.id}::bigint = ANY(ids))
         ORDER BY seq`.execute(tx),
        )
      ).rows;
      expect(ev.map((x) => x.type)).toEqual(['EffectExecuted', 'ReversalRecorded']);
      expect(ev[0]!.tx).toBe(ev[1]!.tx);
      expect(ev[1]!.retraction_id).toBe(retractionId);

      // Repeating with the same reference changes nothing; another reference is a conflict.
      const before = await dump(t.store);
      expect(await completeEffect(core, actor, { effectId: e.id, externalRef: `ext-${kind}` })).toEqual(done);
      await domainError(
        completeEffect(core, actor, { effectId: e.id, externalRef: 'another-ref' }),
        'CONFLICT',
        'effectId',
      );
      await expectUnchanged(t.store, before);
      expect(await reversalsOf(e.id)).toHaveLength(1);
      await expectInvariants(t.store);
    });
  }

  it('an EXECUTING effect that fails after being reached owes nothing', async () => {
    const p = await belief(core, actor, 'race-fail/p');
    const e = await proposed(core, actor, 'refund', [p], 'race-fail:1', 900);
    expect((await claimEffect(core, actor, { kinds: ['refund'] }))?.id).toBe(e.id);
    const { retractionId } = await retractBelief(core, actor, { beliefId: p.id, reason: 'p was false' });
    const failed = await failEffect(core, actor, { effectId: e.id, reason: 'bank declined' });
    expect(failed).toMatchObject({
      status: 'FAILED',
      failure_reason: 'bank declined',
      reached_by: retractionId,
      external_ref: null,
    });
    expect(await reversalsOf(e.id)).toEqual([]);
    // A failed effect cannot be completed afterwards.
    await domainError(completeEffect(core, actor, { effectId: e.id, externalRef: 'late' }), 'CONFLICT', 'effectId');
    expect(await reversalsOf(e.id)).toEqual([]);
    await expectInvariants(t.store);
  });

  it('an effect proposed on a retracted belief is refused as premiseRetracted and nothing is written', async () => {
    const ok = await belief(core, actor, 'prop/ok');
    const gone = await belief(core, actor, 'prop/gone');
    await retractBelief(core, actor, { beliefId: gone.id, reason: 'wrong' });
    const before = await dump(t.store);
    const r = await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [ok.id, gone.id],
      idempotencyKey: 'prop:refused',
      amount: { amountMinor: 10, currency: 'USD' },
    });
    expect(r.kind).toBe('premiseRetracted');
    if (r.kind === 'premiseRetracted') expect(r.premise).toMatchObject({ id: gone.id, status: 'RETRACTED' });
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('proposing twice under one idempotency key returns the first effect, even after it was cancelled; another proposal under it is a CONFLICT', async () => {
    const p = await belief(core, actor, 'idem/p');
    const other = await belief(core, actor, 'idem/other');
    const first = await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [p.id],
      idempotencyKey: 'idem:1',
      amount: { amountMinor: 300, currency: 'EUR' },
    });
    expect(first).toMatchObject({ kind: 'proposed', created: true });
    if (first.kind !== 'proposed') throw new Error('unreachable');

    let before = await dump(t.store);
    const second = await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [p.id],
      idempotencyKey: 'idem:1',
      amount: { amountMinor: 300, currency: 'EUR' },
    });
    expect(second).toEqual({ kind: 'proposed', effect: first.effect, created: false });
    const reused = await proposeEffect(core, actor, {
      kind: 'email',
      supportedBy: [other.id],
      idempotencyKey: 'idem:1',
    }).catch((e: unknown) => e);
    expect(reused).toMatchObject({
      code: 'CONFLICT',
      field: 'idempotencyKey',
      extensions: { effectId: gid('Effect', first.effect.id) },
    });
    expect((reused as Error).message).toMatch(/different kind, amount, currency, supportedBy;/);
    await expectUnchanged(t.store, before);

    await retractBelief(core, actor, { beliefId: p.id, reason: 'p was false' });
    const cancelled = await effect(first.effect.id);
    expect(cancelled.status).toBe('CANCELLED');
    before = await dump(t.store);
    const third = await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [p.id],
      idempotencyKey: 'idem:1',
      amount: { amountMinor: 300, currency: 'EUR' },
    });
    expect(third).toMatchObject({
      kind: 'proposed',
      created: false,
      effect: { id: first.effect.id, status: 'CANCELLED' },
    });
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('an unregistered kind is BAD_USER_INPUT naming kind; the same key then works once the kind exists', async () => {
    const p = await belief(core, actor, 'kind/p');
    const before = await dump(t.store);
    const e = await domainError(
      proposeEffect(core, actor, { kind: 'wire_transfer', supportedBy: [p.id], idempotencyKey: 'kind:1' }),
      'BAD_USER_INPUT',
      'kind',
    );
    expect(e.message).toContain('wire_transfer');
    await expectUnchanged(t.store, before);
    await registerEffectKind(core, actor, { kind: 'wire_transfer', reversible: true });
    const ok = await proposeEffect(core, actor, {
      kind: 'wire_transfer',
      supportedBy: [p.id],
      idempotencyKey: 'kind:1',
    });
    expect(ok).toMatchObject({ kind: 'proposed', created: true });
    // Changing a kind's reversibility afterwards is refused.
    await domainError(
      registerEffectKind(core, actor, { kind: 'wire_transfer', reversible: false }),
      'CONFLICT',
      'kind',
    );
    await expectInvariants(t.store);
  });

  it('claimEffect never hands out an effect whose support fell, and completeEffect on a PENDING effect is a conflict', async () => {
    const p = await belief(core, actor, 'claim/p');
    const e = await proposed(core, actor, 'email', [p], 'claim:1');
    await domainError(completeEffect(core, actor, { effectId: e.id, externalRef: 'x' }), 'CONFLICT', 'effectId');
    await retractBelief(core, actor, { beliefId: p.id, reason: 'p was false' });
    expect(await claimEffect(core, actor, { kinds: ['email'] })).toBeNull();
    const q = await belief(core, actor, 'claim/q');
    const ok = await executed(core, actor, await proposed(core, actor, 'email', [q], 'claim:2'), 'sent-1');
    expect(ok.status).toBe('EXECUTED');
    expect(await reversalsOf(ok.id)).toEqual([]);
    await expectInvariants(t.store);
  });
});

/** A retraction is idempotent, and an effect is reversed at most once whatever reaches it. */
describe.each(engines())('retraction idempotence on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  storeSuite(engine, { shared: true, fleet: 'idem' }, (s) => ({ t, core, actor } = s));

  it('retracting twice returns the original receipt and writes nothing, even through a belief the first one took down', async () => {
    const s = await passportStory(core, actor);
    const first = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
    expect(first.created).toBe(true);
    const before = await dump(t.store);
    expect(await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged, again' })).toEqual({
      retractionId: first.retractionId,
      created: false,
    });
    // A belief that fell in the cascade answers with the retraction that took it down.
    expect(await retractBelief(core, actor, { beliefId: s.derived[1]!.id, reason: 'derived one' })).toEqual({
      retractionId: first.retractionId,
      created: false,
    });
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('two retractions reaching one EXECUTED effect record exactly one reversal under reversal:<effect key>', async () => {
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    const p1 = await belief(core, actor, 'two/p1');
    const p2 = await belief(core, actor, 'two/p2');
    const e = await executed(
      core,
      actor,
      await proposed(core, actor, 'refund', [p1, p2], 'two:refund', 7_700),
      'bank-two',
    );
    const r1 = await retractBelief(core, actor, { beliefId: p1.id, reason: 'p1 false' });
    const r2 = await retractBelief(core, actor, { beliefId: p2.id, reason: 'p2 false' });
    expect(r2.retractionId).not.toBe(r1.retractionId);
    const revs = await read(t.store, 'idem', (tx) =>
      tx.selectFrom('reversals').selectAll().where('effect_id', '=', e.id).execute(),
    );
    expect(revs).toHaveLength(1);
    expect(revs[0]).toMatchObject({
      idempotency_key: reversalKey('two:refund'),
      retraction_id: r1.retractionId,
      status: 'OWED',
    });
    expect(reversalKey('two:refund')).toBe('reversal:two:refund');
    const [t1, t2] = await read(t.store, 'idem', async (tx) => [
      await totalsFor(tx, 'idem', r1.retractionId),
      await totalsFor(tx, 'idem', r2.retractionId),
    ]);
    expect(t1).toMatchObject({ effectsReached: 1, reversalsOwed: 1, owed: [{ amountMinor: '7700', currency: 'USD' }] });
    expect(t2).toMatchObject({ effectsReached: 0, reversalsOwed: 0, owed: [] });
    const recorded = await read(t.store, 'idem', (tx) =>
      tx
        .selectFrom('events')
        .select('retraction_id')
        .where('type', '=', 'ReversalRecorded')
        .where('retraction_id', 'in', [r1.retractionId, r2.retractionId])
        .execute(),
    );
    expect(recorded).toEqual([{ retraction_id: r1.retractionId }]);
    await expectInvariants(t.store);
  });

  it('two retractions reaching one EXECUTING effect: the first marks it, and completing it records one reversal under the first', async () => {
    const p1 = await belief(core, actor, 'run/p1');
    const p2 = await belief(core, actor, 'run/p2');
    const e = await proposed(core, actor, 'refund', [p1, p2], 'run:refund', 1_100);
    expect((await claimEffect(core, actor, { kinds: ['refund'] }))?.id).toBe(e.id);
    const r1 = await retractBelief(core, actor, { beliefId: p1.id, reason: 'p1 false' });
    await retractBelief(core, actor, { beliefId: p2.id, reason: 'p2 false' });
    await completeEffect(core, actor, { effectId: e.id, externalRef: 'bank-run' });
    await completeEffect(core, actor, { effectId: e.id, externalRef: 'bank-run' });
    const rows = await read(t.store, 'idem', async (tx) => ({
      effect: await tx
        .selectFrom('effects')
        .select(['status', 'reached_by'])
        .where('id', '=', e.id)
        .executeTakeFirstOrThrow(),
      reversals: await tx
        .selectFrom('reversals')
        .select(['retraction_id', 'idempotency_key'])
        .where('effect_id', '=', e.id)
        .execute(),
    }));
    expect(rows).toEqual({
      effect: { status: 'EXECUTED', reached_by: r1.retractionId },
      reversals: [{ retraction_id: r1.retractionId, idempotency_key: 'reversal:run:refund' }],
    });
    await expectInvariants(t.store);
  });
});
