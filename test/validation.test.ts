import { describe, expect, it } from 'vitest';
import { engines, expectInvariants, type TestDb } from './support/engines';
import { belief, proposed } from './support/story';
import { addJustification, assertBelief } from '../src/belief/belief.service';
import type { BeliefRow } from '../src/belief/belief.repository';
import { completeEffect, failEffect, proposeEffect, registerEffectKind } from '../src/effect/effect.service';
import { previewRetraction, retractBelief } from '../src/retraction/retraction.service';
import { confirmReversal } from '../src/reversal/reversal.service';
import { LIMITS } from '../src/validation';
import type { Actor, Core } from '../src/core';
import { domainError, dump, expectUnchanged, storeSuite } from './support/helpers';

/** Every input is validated with a clear message naming its field, before anything is written. */
describe.each(engines())('input validation on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  let p: BeliefRow;
  let q: BeliefRow;
  storeSuite(engine, { fleet: 'val', kinds: [{ kind: 'refund', reversible: true }] }, async (s) => {
    ({ t, core, actor } = s);
    p = await belief(core, actor, 'val/p');
    q = await belief(core, actor, 'val/q', [p]);
  });

  it('documents the limits it enforces', () => {
    expect(LIMITS).toMatchObject({
      claimKeyMax: 256,
      statementMax: 4000,
      evidenceMax: 4000,
      reasonMax: 1000,
      premisesMax: 64,
      supportsMax: 64,
      idempotencyKeyMax: 200,
      kindMax: 64,
      amountMax: 2 ** 53 - 1,
    });
    expect(LIMITS.amountMax).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses every bad input with BAD_USER_INPUT naming the field (NOT_FOUND for unknown ids), and writes nothing', async () => {
    const before = await dump(t.store);
    const assert = (over: Record<string, unknown>) =>
      assertBelief(core, actor, { claimKey: 'val/new', statement: 'a statement', ...over } as never);
    const propose = (over: Record<string, unknown>) =>
      proposeEffect(core, actor, {
        kind: 'refund',
        supportedBy: [p.id],
        idempotencyKey: 'val:bad',
        amount: { amountMinor: 100, currency: 'USD' },
        ...over,
      } as never);
    const bad = (promise: Promise<unknown>, field: string, rule?: RegExp) =>
      domainError(promise, 'BAD_USER_INPUT', field).then((e) => {
        if (rule) expect(e.message).toMatch(rule);
      });

    // Unknown ids: NOT_FOUND, naming the field and the id.
    const unknown = '987654321';
    for (const [call, field] of [
      [() => retractBelief(core, actor, { beliefId: unknown, reason: 'x' }), 'beliefId'],
      [() => previewRetraction(core, actor, { beliefId: unknown }), 'beliefId'],
      [() => addJustification(core, actor, { beliefId: unknown, premises: [p.id] }), 'beliefId'],
      [() => addJustification(core, actor, { beliefId: q.id, premises: [unknown] }), 'premises'],
      [() => assert({ derivedFrom: [p.id, unknown] }), 'derivedFrom'],
      [() => propose({ supportedBy: [unknown] }), 'supportedBy'],
      [() => completeEffect(core, actor, { effectId: unknown, externalRef: 'r' }), 'effectId'],
      [() => failEffect(core, actor, { effectId: unknown, reason: 'r' }), 'effectId'],
      [() => confirmReversal(core, actor, { reversalId: unknown, providerRef: 'prv' }), 'reversalId'],
    ] as Array<[() => Promise<unknown>, string]>) {
      const e = await domainError(call(), 'NOT_FOUND', field);
      expect(e.message).toContain(unknown);
    }

    // Claim keys.
    await bad(assert({ claimKey: '' }), 'claimKey', /empty/);
    await bad(assert({ claimKey: 'k'.repeat(LIMITS.claimKeyMax + 1) }), 'claimKey', /at most 256/);
    for (const k of ['has space', 'tab\there', 'new\nline', ' leading', 'trailing ', 'nb\u00a0sp'])
      await bad(assert({ claimKey: k }), 'claimKey');
    await bad(assert({ claimKey: ':starts-with-colon' }), 'claimKey');
    await bad(assert({ claimKey: 'nul\u0000key' }), 'claimKey', /NUL/);
    await bad(assert({ claimKey: 'lone\ud800' }), 'claimKey', /surrogate/);
    await bad(assert({ claimKey: 42 }), 'claimKey', /string/);

    // Statements, evidence, values.
    await bad(assert({ statement: '' }), 'statement', /empty/);
    await bad(assert({ statement: '   \n\t ' }), 'statement', /empty/);
    await bad(assert({ statement: 's'.repeat(LIMITS.statementMax + 1) }), 'statement', /at most 4000/);
    await bad(assert({ statement: 'before\u0000after' }), 'statement', /NUL/);
    await bad(assert({ statement: 'lone \udc00 low' }), 'statement', /surrogate/);
    await bad(assert({ statement: 'reversed \udc00\ud800 pair' }), 'statement', /surrogate/);
    await bad(assert({ evidence: 'doc\u0000' }), 'evidence', /NUL/);
    await bad(assert({ evidence: 'e'.repeat(LIMITS.evidenceMax + 1) }), 'evidence');
    await bad(assert({ value: { text: 'nul\u0000inside' } }), 'value', /NUL/);
    await bad(assert({ value: 'v'.repeat(LIMITS.valueBytesMax) }), 'value', /bytes/);
    await bad(assert({ value: 10n }), 'value');

    // Premises.
    await bad(
      assert({ derivedFrom: Array.from({ length: LIMITS.premisesMax + 1 }, (_, i) => String(i + 1)) }),
      'derivedFrom',
      /at most 64/,
    );
    await bad(
      addJustification(core, actor, { beliefId: q.id, premises: Array.from({ length: 65 }, () => p.id) }),
      'premises',
      /at most 64/,
    );
    await bad(addJustification(core, actor, { beliefId: q.id, premises: [] }), 'premises', /at least 1/);
    await bad(assert({ derivedFrom: 'not-a-list' }), 'derivedFrom', /list/);

    // Ids.
    for (const id of ['abc', '-1', '0', '1.5', '01', '', ' 1', '99999999999999999999', '9223372036854775808']) {
      await bad(retractBelief(core, actor, { beliefId: id, reason: 'x' }), 'beliefId', /valid id/);
    }
    for (const id of [-1, 0, 1.5, Number.NaN])
      await bad(retractBelief(core, actor, { beliefId: id as never, reason: 'x' }), 'beliefId');
    await bad(assert({ derivedFrom: [p.id, 'abc'] }), 'derivedFrom[1]', /valid id/);
    await bad(propose({ supportedBy: ['0'] }), 'supportedBy[0]');
    await bad(completeEffect(core, actor, { effectId: '-1', externalRef: 'r' }), 'effectId');
    await bad(confirmReversal(core, actor, { reversalId: 'abc', providerRef: 'prv' }), 'reversalId');

    // Reasons.
    await bad(retractBelief(core, actor, { beliefId: p.id, reason: '' }), 'reason', /empty/);
    await bad(retractBelief(core, actor, { beliefId: p.id, reason: '  ' }), 'reason', /empty/);
    await bad(
      retractBelief(core, actor, { beliefId: p.id, reason: 'r'.repeat(LIMITS.reasonMax + 1) }),
      'reason',
      /at most 1000/,
    );
    await bad(failEffect(core, actor, { effectId: '1', reason: '' }), 'reason', /empty/);

    // Amounts and currencies.
    for (const amountMinor of [
      -1,
      0,
      1.5,
      2 ** 53,
      Number.MAX_SAFE_INTEGER + 2,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      '100',
    ]) {
      await bad(propose({ amount: { amountMinor, currency: 'USD' } }), 'amount.amountMinor');
    }
    for (const currency of ['usd', 'US', 'USDD', '', 'U$D', 42])
      await bad(propose({ amount: { amountMinor: 100, currency } }), 'amount.currency', /three capital letters/);

    // Kinds, keys, references.
    const e = await domainError(propose({ kind: 'not_registered' }), 'BAD_USER_INPUT', 'kind');
    expect(e.message).toContain('not_registered');
    await bad(propose({ kind: 'Refund' }), 'kind');
    await bad(propose({ kind: '' }), 'kind');
    await bad(propose({ idempotencyKey: '' }), 'idempotencyKey');
    await bad(propose({ idempotencyKey: 'k'.repeat(LIMITS.idempotencyKeyMax + 1) }), 'idempotencyKey');
    await bad(propose({ supportedBy: [] }), 'supportedBy', /at least 1/);
    await bad(
      propose({ supportedBy: Array.from({ length: LIMITS.supportsMax + 1 }, (_, i) => String(i + 1)) }),
      'supportedBy',
      /at most 64/,
    );
    await bad(completeEffect(core, actor, { effectId: '1', externalRef: '' }), 'externalRef');
    await bad(confirmReversal(core, actor, { reversalId: '1', providerRef: 'x\u0000' }), 'providerRef');
    await bad(registerEffectKind(core, actor, { kind: 'payout', reversible: 'yes' as never }), 'reversible');
    await bad(previewRetraction(core, actor, { beliefId: p.id, first: 0 }), 'first');
    await bad(previewRetraction(core, actor, { beliefId: p.id, after: 'garbage' }), 'after');

    await expectUnchanged(t.store, before);
  });

  it('accepts every limit exactly at its boundary', async () => {
    const key = 'k'.repeat(LIMITS.claimKeyMax);
    expect(
      (
        await assertBelief(core, actor, {
          claimKey: key,
          statement: 's'.repeat(LIMITS.statementMax),
          evidence: 'e'.repeat(LIMITS.evidenceMax),
        })
      ).kind,
    ).toBe('asserted');
    expect(
      (await assertBelief(core, actor, { claimKey: 'val/unicode:ключ/λ', statement: 'a valid pair 😀 and\nnew lines' }))
        .kind,
    ).toBe('asserted');
    const premises: BeliefRow[] = [];
    for (let i = 0; i < LIMITS.premisesMax; i++) premises.push(await belief(core, actor, `val/premise/${i}`));
    expect(
      (
        await assertBelief(core, actor, {
          claimKey: 'val/wide',
          statement: 'rests on 64',
          derivedFrom: premises.map((b) => b.id),
        })
      ).kind,
    ).toBe('asserted');
    const max = await proposed(core, actor, 'refund', premises, 'k'.repeat(LIMITS.idempotencyKeyMax), LIMITS.amountMax);
    expect(max.amount_minor).toBe(String(2 ** 53 - 1));
    expect(
      (await retractBelief(core, actor, { beliefId: premises[0]!.id, reason: 'r'.repeat(LIMITS.reasonMax) })).created,
    ).toBe(true);
    await expectInvariants(t.store);
  });
});
