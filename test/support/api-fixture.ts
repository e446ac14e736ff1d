import { reinstateRetraction } from '../../src/reinstatement/reinstatement.service';
import type { Actor, Core } from '../../src/core';
import { gid } from '../../src/kernel/ids';
import { assertBelief } from '../../src/belief/belief.service';
import { claimEffect, registerEffectKind } from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { inTx } from '../../src/store/tx';
import { belief, executed, proposed } from './story';

/**
 * One fleet's worth of objects in every state the API's id-taking operations act on, built through
 * the services (not under test here): a premise and a belief derived from it, a spare premise, two
 * OPEN contradictions, a PENDING and an EXECUTING refund, and a retraction that reached an executed
 * payout (OWED reversal) and an executed card charge (UNREACHABLE). Ids come back as relay global ids, claim keys as written.
 */
export async function fleetFixture(core: Core, actor: Actor, tag: string) {
  await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
  await registerEffectKind(core, actor, { kind: 'card_charge', reversible: false });
  await registerEffectKind(core, actor, { kind: 'payout', reversible: true });
  const p = await belief(core, actor, `${tag}/p`);
  const d = await belief(core, actor, `${tag}/d`, [p]);
  const e = await belief(core, actor, `${tag}/e`);
  const contradiction = async (key: string) => {
    await assertBelief(core, actor, {
      claimKey: key,
      statement: `${key} is 1`,
      value: 1,
      evidence: 'a rumour in a chat group',
    });
    const r = await assertBelief(core, actor, {
      claimKey: key,
      statement: `${key} is 2`,
      value: 2,
      evidence: 'verified document from the official registry',
    });
    if (r.kind !== 'contradiction') throw new Error(`expected a contradiction, got ${r.kind}`);
    return r.contradictionId;
  };
  const c1 = await contradiction(`${tag}/x`);
  const c2 = await contradiction(`${tag}/y`);
  // EXECUTING first (claimEffect takes the oldest ready one), then PENDING.
  const executing = await proposed(core, actor, 'refund', [e], `${tag}:executing`, 2_000);
  const claimed = await claimEffect(core, actor, { kinds: ['refund'] });
  if (claimed?.id !== executing.id) throw new Error('fixture: expected to claim the executing effect');
  const pending = await proposed(core, actor, 'refund', [d], `${tag}:pending`, 1_000);
  const r = await belief(core, actor, `${tag}/r`);
  const refunded = await executed(
    core,
    actor,
    await proposed(core, actor, 'payout', [r], `${tag}:owed`, 3_000),
    'bank-ref',
  );
  const done = await executed(
    core,
    actor,
    await proposed(core, actor, 'card_charge', [r], `${tag}:charge`, 700),
    'card-ref',
  );
  // A PENDING effect on r: the retraction cancels it, and reinstating the retraction makes it restorable.
  const cancelled = await proposed(core, actor, 'refund', [r], `${tag}:cancelled`, 400);
  const { retractionId } = await retractBelief(core, actor, { beliefId: r.id, reason: 'fixture: r was wrong' });
  // Another retraction, already taken back: a reinstatement receipt to read.
  const w = await belief(core, actor, `${tag}/w`);
  const wrong = await retractBelief(core, actor, { beliefId: w.id, reason: 'fixture: w looked wrong' });
  const reinstated = await reinstateRetraction(core, actor, {
    retractionId: wrong.retractionId,
    reason: 'fixture: w was right',
  });
  const reversal = await inTx(core.store, { fleet: actor.fleet, readOnly: true }, (tx) =>
    tx.selectFrom('reversals').select('id').where('effect_id', '=', refunded.id).executeTakeFirstOrThrow(),
  );
  return {
    tag,
    keys: { p: p.claim_key, d: d.claim_key, e: e.claim_key },
    agent: gid('Agent', actor.agentId),
    p: gid('Belief', p.id),
    d: gid('Belief', d.id),
    e: gid('Belief', e.id),
    r: gid('Belief', r.id),
    c1: gid('Contradiction', c1),
    c2: gid('Contradiction', c2),
    executing: gid('Effect', executing.id),
    pending: gid('Effect', pending.id),
    executed: gid('Effect', done.id),
    refunded: gid('Effect', refunded.id),
    retraction: gid('Retraction', retractionId),
    reversal: gid('Reversal', reversal.id),
    cancelled: gid('Effect', cancelled.id),
    reinstatement: gid('Reinstatement', reinstated.reinstatementId),
  };
}

export type Fixture = Awaited<ReturnType<typeof fleetFixture>>;
