import { assertBelief } from '../../belief/belief.service';
import { parseGids } from '../../kernel/ids';
import { type Context, actorOf, builder, grantRead } from '../builder';
import { carrier, typed, typedUnion } from '../shapes';
import { BeliefRef } from './belief';
import { ContradictionRef } from './contradiction';

/** COMMIT of a turn (assertBelief) and what it answers: one of five outcomes. */

const AssertBeliefInput = builder.inputType('AssertBeliefInput', {
  description: 'COMMIT of a turn.',
  fields: (t) => ({
    claimKey: t.string({
      required: true,
      description:
        'What the belief is about. Normalised to Unicode NFC: composed and decomposed spellings are one claim.',
    }),
    statement: t.string({ required: true, description: 'The assertion in words.' }),
    value: t.field({ type: 'JSON', description: 'The asserted value.' }),
    evidence: t.string({ description: 'Outside evidence for it.' }),
    derivedFrom: t.idList({
      description: 'Premises this belief is derived from (one justification). Every premise must be ACTIVE at commit.',
    }),
    basedOn: t.string({ description: 'The snapshot returned by the READ this turn was based on.' }),
  }),
});

const BeliefAssertedRef = carrier(
  'BeliefAsserted',
  'The belief was written ACTIVE.',
  'belief',
  () => BeliefRef,
  'The new belief.',
);
const BeliefCorroboratedRef = carrier(
  'BeliefCorroborated',
  'The claim already holds an ACTIVE belief with the same value.',
  'belief',
  () => BeliefRef,
  'The belief that already holds.',
);
const ContradictionRaisedRef = carrier(
  'ContradictionRaised',
  'The claim holds an ACTIVE belief with a different value; nothing was written to it.',
  'contradiction',
  () => ContradictionRef,
  'The contradiction raised.',
);
export const PremiseRetractedRef = carrier(
  'PremiseRetracted',
  'A premise was retracted between READ and COMMIT; nothing was written.',
  'premise',
  () => BeliefRef,
  'The premise that fell.',
);
const ClaimChangedRef = builder.simpleObject('ClaimChangedSinceRead', {
  description: 'The claim was written after the READ named in basedOn; nothing was written. READ and THINK again.',
  fields: (t) => ({
    claimKey: t.string({ description: 'The claim.' }),
    current: t.field({ type: BeliefRef, nullable: true, description: 'What the claim holds now.' }),
  }),
});

const AssertBeliefResult = typedUnion('AssertBeliefResult', 'What COMMIT decided.', [
  BeliefAssertedRef,
  BeliefCorroboratedRef,
  ContradictionRaisedRef,
  PremiseRetractedRef,
  ClaimChangedRef,
]);

builder.mutationField('assertBelief', (t) =>
  t.field({
    type: AssertBeliefResult,
    authScopes: { scope: 'beliefs:write' },
    description:
      'COMMIT phase: a short serializable transaction that locks the claim, reads what is believed, and writes or raises a contradiction.',
    args: { input: t.arg({ type: AssertBeliefInput, required: true, description: 'The belief.' }) },
    resolve: resolveAssertBelief,
  }),
);

/** assertBelief: COMMIT's outcome as the union member that names it; what the caller wrote, it may read. */
async function resolveAssertBelief(_root: unknown, a: { input: typeof AssertBeliefInput.$inferInput }, ctx: Context) {
  const r = await assertBelief(ctx.core, actorOf(ctx), {
    ...a.input,
    derivedFrom: parseGids('input.derivedFrom', a.input.derivedFrom as string[] | null, 'Belief'),
  });
  // The caller's own belief, or the one that already says the same. Not a premise that fell: naming any
  // RETRACTED belief's id would read it without a write (a read oracle); it follows the Belief rule, as
  // ClaimChangedSinceRead.current does, another agent's belief the caller must READ again to see.
  if (r.kind === 'asserted' || r.kind === 'corroborated') grantRead(ctx, 'Belief', r.belief.id);
  // The contradiction the caller's own assertion raised: its proposal is what the caller sent.
  if (r.kind === 'contradiction') grantRead(ctx, 'Contradiction', r.contradictionId);
  switch (r.kind) {
    case 'asserted':
      return typed('BeliefAsserted', { belief: r.belief });
    case 'corroborated':
      return typed('BeliefCorroborated', { belief: r.belief });
    case 'contradiction':
      return typed('ContradictionRaised', { contradiction: r.contradictionId });
    case 'premiseRetracted':
      return typed('PremiseRetracted', { premise: r.premise });
    case 'claimChanged':
      return typed('ClaimChangedSinceRead', { claimKey: r.claimKey, current: r.current });
  }
}
