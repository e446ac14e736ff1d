import {
  type ContradictionRow,
  contradictionIds,
  contradictionsByIds,
} from '../../contradiction/contradiction.repository';
import { adjudicateContradiction, resolveContradiction } from '../../adjudication/adjudication.service';
import { parseGid } from '../../kernel/ids';
import { type Context, actorOf, builder, grantRead, readRule } from '../builder';
import { type FleetNodeRef, fleetNode, fleetRead } from '../loaders';
import { AgentRef } from './agent';
import { BeliefRef } from './belief';
import { RetractionRef } from './retraction';
import { ContradictionStatusEnum, VerdictEnum } from './enums';
import { orNull } from '../shapes';

const ProposedBeliefRef = builder.objectRef<ContradictionRow>('ProposedBelief').implement({
  description:
    'The assertion that contradicted the ACTIVE belief; not written unless accepted. Needs beliefs:read or contradictions:adjudicate.',
  // The same row as its Contradiction, so the same rule and the same grant.
  authScopes: (c, ctx) => readRule(ctx, 'Contradiction', { type: 'Contradiction', id: c.id }),
  fields: (t) => ({
    claimKey: t.exposeString('claim_key', { description: 'The claim both beliefs are about.' }),
    statement: t.exposeString('proposed_statement', { description: 'The proposed statement.' }),
    value: t.expose('proposed_value', { type: 'JSON', nullable: true, description: 'The proposed value.' }),
    evidence: t.exposeString('proposed_evidence', { nullable: true, description: "The proposer's evidence." }),
    author: t.expose('proposed_author_id', { type: AgentRef, description: 'The agent that proposed it.' }),
  }),
});

export const ContradictionRef: FleetNodeRef<ContradictionRow> = fleetNode('Contradiction', contradictionsByIds, {
  description:
    'An assertion whose value differs from the ACTIVE belief on the same claim key. Needs beliefs:read or contradictions:adjudicate.',
  readable: 'Contradiction',
  fields: (t) => ({
    claimKey: t.exposeString('claim_key', { description: 'The contested claim.' }),
    existing: t.expose('existing_id', {
      type: BeliefRef,
      description: 'The belief that was ACTIVE when the proposal arrived.',
    }),
    proposed: t.field({ type: ProposedBeliefRef, description: 'What was proposed instead.', resolve: (c) => c }),
    status: t.expose('status', { type: ContradictionStatusEnum, description: 'Where it stands.' }),
    verdict: t.expose('verdict', { type: VerdictEnum, nullable: true, description: 'The last verdict.' }),
    rationale: t.exposeString('rationale', { nullable: true, description: 'Why.' }),
    adjudicator: t.exposeString('adjudicator', {
      nullable: true,
      description: 'Which adjudicator decided: heuristic, bedrock:<model id>, or the agent that resolved it.',
    }),
    resolution: t.expose(
      'resolution_id',
      orNull(RetractionRef, 'When ACCEPT_PROPOSED, the retraction of the existing belief.'),
    ),
    accepted: t.expose('accepted_id', orNull(BeliefRef, 'The belief written for the proposal when it was accepted.')),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was raised.' }),
    resolvedAt: t.expose('resolved_at', { type: 'DateTime', nullable: true, description: 'When it was resolved.' }),
  }),
});

const ResolveContradictionInput = builder.inputType('ResolveContradictionInput', {
  description: "An agent's verdict.",
  fields: (t) => ({
    contradictionId: t.id({ required: true, description: 'The contradiction.' }),
    verdict: t.field({ type: VerdictEnum, required: true, description: 'KEEP_EXISTING or ACCEPT_PROPOSED.' }),
    rationale: t.string({ required: true, description: 'Why (recorded).' }),
  }),
});

builder.queryField('contradictions', (t) =>
  t.field({
    // The Contradiction type's own rule: an adjudicator lists what it is to decide.
    type: [ContradictionRef],
    authScopes: { $any: { scope: 'beliefs:read', $any: { scope: 'contradictions:adjudicate' } } },
    description:
      'Contradictions of your fleet, oldest first (at most 500). Needs beliefs:read or contradictions:adjudicate.',
    args: { status: t.arg({ type: ContradictionStatusEnum, description: 'Only contradictions in this status.' }) },
    resolve: (_r, a, ctx) => fleetRead(ctx, (tx, fleet) => contradictionIds(tx, fleet, a.status ?? null, 500)),
  }),
);

/**
 * A verdict's answer: the contradiction it decided and, when it accepted the proposal, the belief it wrote for it and
 * the retraction of the belief it replaced — this call wrote them, so the adjudicator reads them whatever its scopes
 * (contradictions:adjudicate opens neither beliefs nor receipts). The belief it retracted (existing) follows the Belief
 * rule: the verdict changed its status, it did not write it.
 */
async function decided(ctx: Context, id: string): Promise<string> {
  const [c] = await fleetRead(ctx, (tx, fleet) => contradictionsByIds(tx, fleet, [id]));
  grantRead(ctx, 'Contradiction', id);
  grantRead(ctx, 'Belief', c?.accepted_id);
  grantRead(ctx, 'Retraction', c?.resolution_id);
  return id;
}

builder.mutationFields((t) => ({
  adjudicateContradiction: t.field({
    type: ContradictionRef,
    authScopes: { scope: 'contradictions:adjudicate' },
    description:
      "Runs the configured adjudicator under the claim's lease; exactly one adjudicator holds a claim at a time.",
    args: { contradictionId: t.arg.id({ required: true, description: 'The contradiction.' }) },
    resolve: resolveAdjudicateContradiction,
  }),
  resolveContradiction: t.field({
    type: ContradictionRef,
    authScopes: { scope: 'contradictions:adjudicate' },
    description: "An agent's own verdict on a contradiction not under a live lease.",
    args: { input: t.arg({ type: ResolveContradictionInput, required: true, description: 'The verdict.' }) },
    resolve: resolveResolveContradiction,
  }),
}));

/** adjudicateContradiction: the configured adjudicator's verdict, under the claim's lease held by this request. */
async function resolveAdjudicateContradiction(_root: unknown, a: { contradictionId: string }, ctx: Context) {
  return decided(
    ctx,
    await adjudicateContradiction(
      ctx.core,
      actorOf(ctx),
      ctx.adjudicator,
      parseGid('contradictionId', String(a.contradictionId), 'Contradiction'),
      {
        holder: `${ctx.agent!.name}#${ctx.requestId}`,
      },
    ),
  );
}

/** resolveContradiction: the calling agent's own verdict. */
async function resolveResolveContradiction(
  _root: unknown,
  a: { input: typeof ResolveContradictionInput.$inferInput },
  ctx: Context,
) {
  return decided(
    ctx,
    await resolveContradiction(ctx.core, actorOf(ctx), ctx.agent!.name, {
      contradictionId: parseGid('input.contradictionId', String(a.input.contradictionId), 'Contradiction'),
      verdict: a.input.verdict,
      rationale: a.input.rationale,
    }),
  );
}
