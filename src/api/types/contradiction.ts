import { type ContradictionRow, contradictionIds, contradictionsByIds } from '../../contradiction/contradiction.repository';
import { adjudicateContradiction, resolveContradiction } from '../../contradiction/contradiction.service';
import { parseGid } from '../../kernel/ids';
import { actorOf, builder, readRule } from '../builder';
import { enumOf } from '../shapes';
import { fleetNodeRef, fleetRead } from '../loaders';
import { AgentRef } from './agent';
import { BeliefRef } from './belief';
import { RetractionRef } from './retraction';

const ContradictionStatusEnum = enumOf<ContradictionRow['status']>('ContradictionStatus', 'OPEN → ADJUDICATING (under a lease) → RESOLVED; an ESCALATE verdict returns it to OPEN.', {
  OPEN: 'Waiting for an adjudicator or an agent.',
  ADJUDICATING: 'An adjudicator holds the claim\'s lease.',
  RESOLVED: 'A verdict was committed.',
});

const VerdictEnum = enumOf<NonNullable<ContradictionRow['verdict']>>('Verdict', 'What an adjudicator decided.', {
  KEEP_EXISTING: 'The ACTIVE belief stands; the proposal is dropped.',
  ACCEPT_PROPOSED: 'The existing belief is retracted (full cascade) and the proposal written ACTIVE.',
  ESCALATE: 'Could not decide; left for resolveContradiction.',
});

const ProposedBeliefRef = builder.objectRef<ContradictionRow>('ProposedBelief').implement({
  description: 'The assertion that contradicted the ACTIVE belief; not written unless accepted. Needs beliefs:read or contradictions:adjudicate.',
  // The same row as its Contradiction, so the same rule and the same grant.
  authScopes: (c, ctx) => readRule(ctx, 'Contradiction', { type: 'Contradiction', id: c.id }),
  fields: (t) => ({
    claimKey: t.string({ description: 'The claim both beliefs are about.', resolve: (c) => c.claim_key }),
    statement: t.string({ description: 'The proposed statement.', resolve: (c) => c.proposed_statement }),
    value: t.field({ type: 'JSON', nullable: true, description: 'The proposed value.', resolve: (c) => c.proposed_value ?? null }),
    evidence: t.string({ nullable: true, description: 'The proposer\'s evidence.', resolve: (c) => c.proposed_evidence }),
    author: t.field({ type: AgentRef, description: 'The agent that proposed it.', resolve: (c) => c.proposed_author_id }),
  }),
});

export const ContradictionRef = fleetNodeRef<ContradictionRow>('Contradiction', 'contradiction', contradictionsByIds);

ContradictionRef.implement({
  description: 'An assertion whose value differs from the ACTIVE belief on the same claim key. Needs beliefs:read or contradictions:adjudicate.',
  authScopes: (c, ctx) => readRule(ctx, 'Contradiction', { type: 'Contradiction', id: c.id }),
  fields: (t) => ({
    claimKey: t.string({ description: 'The contested claim.', resolve: (c) => c.claim_key }),
    existing: t.field({ type: BeliefRef, description: 'The belief that was ACTIVE when the proposal arrived.', resolve: (c) => c.existing_id }),
    proposed: t.field({ type: ProposedBeliefRef, description: 'What was proposed instead.', resolve: (c) => c }),
    status: t.field({ type: ContradictionStatusEnum, description: 'Where it stands.', resolve: (c) => c.status }),
    verdict: t.field({ type: VerdictEnum, nullable: true, description: 'The last verdict.', resolve: (c) => c.verdict }),
    rationale: t.string({ nullable: true, description: 'Why.', resolve: (c) => c.rationale }),
    adjudicator: t.string({ nullable: true, description: 'Which adjudicator decided: heuristic, bedrock:<model id>, or the agent that resolved it.', resolve: (c) => c.adjudicator }),
    resolution: t.field({ type: RetractionRef, nullable: true, description: 'When ACCEPT_PROPOSED, the retraction of the existing belief.', resolve: (c) => c.resolution_id }),
    accepted: t.field({ type: BeliefRef, nullable: true, description: 'The belief written for the proposal when it was accepted.', resolve: (c) => c.accepted_id }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was raised.', resolve: (c) => c.created_at }),
    resolvedAt: t.field({ type: 'DateTime', nullable: true, description: 'When it was resolved.', resolve: (c) => c.resolved_at }),
  }),
});

const ResolveContradictionInput = builder.inputType('ResolveContradictionInput', {
  description: 'An agent\'s verdict.',
  fields: (t) => ({
    contradictionId: t.id({ required: true, description: 'The contradiction.' }),
    verdict: t.field({ type: VerdictEnum, required: true, description: 'KEEP_EXISTING or ACCEPT_PROPOSED.' }),
    rationale: t.string({ required: true, description: 'Why (recorded).' }),
  }),
});

builder.queryFields((t) => ({
  contradictions: t.field({
    // The Contradiction type's own rule: an adjudicator lists what it is to decide.
    type: [ContradictionRef], authScopes: { $any: { scope: 'beliefs:read', $any: { scope: 'contradictions:adjudicate' } } } as never,
    description: 'Contradictions of your fleet, oldest first (at most 500). Needs beliefs:read or contradictions:adjudicate.',
    args: { status: t.arg({ type: ContradictionStatusEnum, description: 'Only contradictions in this status.' }) },
    resolve: (_r, a, ctx) => fleetRead(ctx, (tx, fleet) => contradictionIds(tx, fleet, a.status ?? null, 500)),
  }),
}));

builder.mutationFields((t) => ({
  adjudicateContradiction: t.field({
    type: ContradictionRef, authScopes: { scope: 'contradictions:adjudicate' },
    description: 'Runs the configured adjudicator under the claim\'s lease; exactly one adjudicator holds a claim at a time.',
    args: { contradictionId: t.arg.id({ required: true, description: 'The contradiction.' }) },
    resolve: (_r, a, ctx) =>
      adjudicateContradiction(ctx.core, actorOf(ctx), ctx.adjudicator, parseGid('contradictionId', String(a.contradictionId), 'Contradiction'), {
        holder: `${ctx.agent!.name}#${ctx.requestId}`,
      }),
  }),
  resolveContradiction: t.field({
    type: ContradictionRef, authScopes: { scope: 'contradictions:adjudicate' }, description: 'An agent\'s own verdict on a contradiction not under a live lease.',
    args: { input: t.arg({ type: ResolveContradictionInput, required: true, description: 'The verdict.' }) },
    resolve: (_r, a, ctx) =>
      resolveContradiction(ctx.core, actorOf(ctx), ctx.agent!.name, {
        contradictionId: parseGid('input.contradictionId', String(a.input.contradictionId), 'Contradiction'), verdict: a.input.verdict, rationale: a.input.rationale,
      }),
  }),
}));
