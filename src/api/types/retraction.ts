import { parseGid } from '../../kernel/ids';
import { type Page, decodeDepthCursor, decodeIdCursor, encodeDepthCursor, encodeIdCursor } from '../../kernel/page';
import { receiptEffects } from '../../retraction/receipt';
import { type RetractionRow, retractedBeliefPage, retractionPage, retractionsByIds, totalsFor } from '../../retraction/retraction.repository';
import { type Preview, previewRetraction, retractBelief } from '../../retraction/retraction.service';
import { reversalsOfRetraction } from '../../reversal/reversal.repository';
import { actorOf, builder, grantRead, readRule } from '../builder';
import { fleetNodeRef, fleetRead } from '../loaders';
import { connectionOf, firstArg, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { BeliefConnection, BeliefRef } from './belief';
import { EffectRef } from './effect';
import { TotalsRef } from './money';
import { ReversalRef } from './reversal';

function depthAfter(after: string | null | undefined): string | null {
  if (after == null) return null;
  decodeDepthCursor('after', after);
  return after;
}

function beliefPageConnection(page: Page<{ id: string; depth: number }>, hasPrevious: boolean) {
  return connectionOf(page, (b) => encodeDepthCursor(b.depth, b.id), hasPrevious, (b) => b.id);
}

export const RetractionRef = fleetNodeRef<RetractionRow>('Retraction', 'retraction', retractionsByIds);

RetractionRef.implement({
  description: 'The receipt: root, reason, actor, and everything it took down, cancelled or reached, with totals. Needs receipts:read.',
  authScopes: (r, ctx) => readRule(ctx, 'Receipt', { type: 'Retraction', id: r.id }),
  fields: (t) => ({
    root: t.field({ type: BeliefRef, description: 'The belief retracted.', resolve: (r) => r.root_id }),
    reason: t.exposeString('reason', { description: 'Why it was retracted.' }),
    actor: t.field({ type: AgentRef, description: 'The agent that retracted it.', resolve: (r) => r.actor_id }),
    createdAt: t.field({ type: 'DateTime', description: 'When the retraction committed.', resolve: (r) => r.created_at }),
    beliefs: t.field({
      type: BeliefConnection,
      description: 'Every belief this retraction took down, root first, then in cascade order.',
      args: pageArgs(t),
      resolve: async (r, args, ctx) => {
        const first = firstArg(args.first);
        const after = depthAfter(args.after);
        const page = await fleetRead(ctx, (tx, fleet) => retractedBeliefPage(tx, fleet, r.id, first, after));
        return beliefPageConnection(page, after !== null) as never;
      },
    }),
    cancelledEffects: t.field({
      type: [EffectRef],
      description: 'PENDING effects this retraction cancelled.',
      resolve: (r, _a, ctx) => fleetRead(ctx, async (tx, fleet) => (await receiptEffects(tx, fleet, r.id)).cancelled.map((e) => e.id)),
    }),
    reversals: t.field({
      type: [ReversalRef],
      description: 'Reversals recorded for executed effects it reached (owed or unreachable).',
      resolve: (r, _a, ctx) => fleetRead(ctx, async (tx, fleet) => (await reversalsOfRetraction(tx, fleet, r.id)).map((x) => x.id)),
    }),
    totals: t.field({ type: TotalsRef, description: 'Counts and money, per currency.', resolve: async (r, _a, ctx) => ({ ...(await fleetRead(ctx, (tx, fleet) => totalsFor(tx, fleet, r.id))), retractionId: r.id }) }),
  }),
});

export const RetractionConnection = builder.connectionObject(
  {
    type: RetractionRef,
    name: 'RetractionConnection',
    description: 'A page of receipts.',
    fields: (t) => ({ totalCount: t.int({ description: 'How many there are in all.', resolve: (c) => (c as unknown as { totalCount: number }).totalCount }) }),
  },
  { name: 'RetractionEdge', description: 'A receipt and its cursor.' },
);

export const PreviewRef = builder.objectRef<Preview>('RetractionPreview').implement({
  description: 'What a retraction of root would do, computed without changing anything.',
  fields: (t) => ({
    root: t.field({ type: BeliefRef, description: 'The belief that would be retracted.', resolve: (p) => p.rootId }),
    beliefs: t.field({
      type: BeliefConnection,
      description: 'Every belief that would fall, root first, then in cascade order.',
      args: pageArgs(t),
      resolve: async (p, args, ctx) => {
        const first = firstArg(args.first);
        const after = depthAfter(args.after);
        // The default page was computed with the preview; another page reruns the same simulation.
        const page = first === 50 && after === null ? p.beliefs : (await previewRetraction(ctx.core, actorOf(ctx), { beliefId: p.rootId, first, after })).beliefs;
        return beliefPageConnection(page, after !== null) as never;
      },
    }),
    survivors: t.field({ type: [BeliefRef], description: 'Dependents that would stay ACTIVE because another justification still holds.', resolve: (p) => p.survivors }),
    pendingEffects: t.field({ type: [EffectRef], description: 'PENDING effects that would be cancelled.', resolve: (p) => p.pendingEffects }),
    executingEffects: t.field({ type: [EffectRef], description: 'EXECUTING effects that would be marked reached (their reversal is recorded when they complete).', resolve: (p) => p.executingEffects }),
    executedEffects: t.field({ type: [EffectRef], description: 'EXECUTED effects that would be reached: owed a reversal, or unreachable.', resolve: (p) => p.executedEffects }),
    totals: t.field({ type: TotalsRef, description: 'The receipt\'s figures, as they would be.', resolve: (p) => p.totals }),
  }),
});

builder.queryFields((t) => ({
  previewRetraction: t.field({
    type: PreviewRef, authScopes: { scope: 'beliefs:read' }, description: 'What retracting this belief would do, computed without changing anything.',
    args: { beliefId: t.arg.id({ required: true, description: 'The belief to preview.' }) },
    resolve: (_r, a, ctx) => previewRetraction(ctx.core, actorOf(ctx), { beliefId: parseGid('beliefId', String(a.beliefId), 'Belief') }),
  }),
  retraction: t.field({
    type: RetractionRef, nullable: true, authScopes: { scope: 'receipts:read' }, description: 'A receipt by id.',
    args: { id: t.arg.id({ required: true, description: 'Global id.' }) },
    resolve: (_r, a) => parseGid('id', String(a.id), 'Retraction'),
  }),
  retractions: t.field({
    type: RetractionConnection, authScopes: { scope: 'receipts:read' }, description: 'Receipts, newest first.',
    args: pageArgs(t),
    resolve: async (_r, a, ctx) => {
      const first = firstArg(a.first);
      const after = decodeIdCursor('after', a.after);
      const page = await fleetRead(ctx, (tx, fleet) => retractionPage(tx, fleet, first, after));
      return connectionOf(page, (r) => encodeIdCursor(r.id), after !== null) as never;
    },
  }),
}));

builder.mutationFields((t) => ({
  retractBelief: t.field({
    type: RetractionRef, authScopes: { scope: 'beliefs:retract' },
    description: 'Retracts a belief and cascades in one transaction. Retracting an already retracted belief returns its original receipt and writes nothing.',
    args: { input: t.arg({ type: builder.inputType('RetractBeliefInput', {
      description: 'What to retract and why.',
      fields: (f) => ({
        beliefId: f.id({ required: true, description: 'The belief that turned out false.' }),
        reason: f.string({ required: true, description: 'Why (kept on the receipt).' }),
      }),
    }), required: true, description: 'The retraction.' }) },
    resolve: async (_r, a, ctx) => {
      const { retractionId } = await retractBelief(ctx.core, actorOf(ctx), { beliefId: parseGid('input.beliefId', String(a.input.beliefId), 'Belief'), reason: a.input.reason });
      grantRead(ctx, 'Retraction', retractionId);
      return retractionId;
    },
  }),
}));
