import { expect } from 'vitest';
import type { Actor, Core } from '../../src/core';
import { assertBelief, type AssertBeliefResult } from '../../src/belief/belief.service';
import type { BeliefRow } from '../../src/belief/belief.repository';
import { claimEffect, completeEffect, proposeEffect, registerEffectKind } from '../../src/effect/effect.service';
import type { EffectRow } from '../../src/effect/effect.repository';

export function asserted(r: AssertBeliefResult): BeliefRow {
  if (r.kind !== 'asserted') throw new Error(`expected asserted, got ${r.kind}`);
  return r.belief;
}

export async function belief(
  core: Core,
  actor: Actor,
  claimKey: string,
  derivedFrom: BeliefRow[] = [],
  value: unknown = true,
): Promise<BeliefRow> {
  return asserted(
    await assertBelief(core, actor, {
      claimKey,
      statement: `${claimKey} holds`,
      value,
      derivedFrom: derivedFrom.map((b) => b.id),
    }),
  );
}

export async function proposed(
  core: Core,
  actor: Actor,
  kind: string,
  supports: BeliefRow[],
  key: string,
  amountMinor?: number,
): Promise<EffectRow> {
  const r = await proposeEffect(core, actor, {
    kind,
    supportedBy: supports.map((b) => b.id),
    idempotencyKey: key,
    amount: amountMinor === undefined ? null : { amountMinor, currency: 'USD' },
  });
  if (r.kind !== 'proposed') throw new Error(`expected proposed, got ${r.kind}`);
  return r.effect;
}

/** Claims the given effect (it must be the oldest ready one of its kind) and completes it. */
export async function executed(core: Core, actor: Actor, effect: EffectRow, ref: string): Promise<EffectRow> {
  const claimed = await claimEffect(core, actor, { kinds: [effect.kind] });
  expect(claimed?.id).toBe(effect.id);
  return completeEffect(core, actor, { effectId: effect.id, externalRef: ref });
}

/**
 * The passport story: a passport verified; three beliefs derived from it; a $1,240.00 refund and an
 * $89.00 card charge executed; one effect still pending.
 */
export async function passportStory(core: Core, actor: Actor, prefix = 'customer:4411') {
  await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
  await registerEffectKind(core, actor, { kind: 'card_charge', reversible: false });
  await registerEffectKind(core, actor, { kind: 'payout', reversible: true });
  const passport = asserted(
    await assertBelief(core, actor, {
      claimKey: `${prefix}/passport.authentic`,
      statement: 'The passport of customer 4411 is authentic',
      value: true,
      evidence: 'document check #A-77',
    }),
  );
  const identity = await belief(core, actor, `${prefix}/identity.verified`, [passport]);
  const refundEligible = await belief(core, actor, `${prefix}/refund.eligible`, [identity]);
  const kycTier = await belief(core, actor, `${prefix}/kyc.tier`, [passport], 'gold');
  const refund = await executed(
    core,
    actor,
    await proposed(core, actor, 'refund', [refundEligible], `${prefix}:refund-1`, 124_000),
    'bank-ref-1',
  );
  const charge = await executed(
    core,
    actor,
    await proposed(core, actor, 'card_charge', [kycTier], `${prefix}:charge-1`, 8_900),
    'card-ref-1',
  );
  const pending = await proposed(core, actor, 'payout', [identity], `${prefix}:payout-1`, 50_000);
  return { passport, derived: [identity, refundEligible, kycTier], refund, charge, pending };
}
