import { parseGid } from '../../kernel/ids';
import { type Page, decodeDepthCursor, encodeDepthCursor } from '../../kernel/page';
import { receiptEffects } from '../../retraction/receipt';
import {
  type RetractionRow,
  retractedBeliefPage,
  retractionPage,
  retractionsByIds,
  totalsFor,
} from '../../retraction/retraction.repository';
import { type Preview, previewRetraction, retractBelief } from '../../retraction/retraction.service';
import { reversalsOfRetraction } from '../../reversal/reversal.repository';
import { type Context, actorOf, builder, grantRead } from '../builder';
import { inputArg, ofType } from '../shapes';
import { type FleetNodeRef, fleetNode, fleetRead, nodeById } from '../loaders';
import { type ConnectionShape, connectionOf, countedConnection, firstArg, newestFirst, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { BeliefConnection, BeliefRef } from './belief';
import { EffectRef } from './effect';
import { TotalsRef } from './money';
import { ReversalRef } from './reversal';

/** A connection of beliefs in cascade order (root first): `read` returns the page after the `after` cursor. */
async function cascadeOrder(
  args: { first?: number | null; after?: string | null },
  read: (first: number, after: string | null) => Promise<Page<{ id: string; depth: number }>>,
): Promise<ConnectionShape<string>> {
  const first = firstArg(args.first);
  const after = args.after ?? null;
  if (after !== null) decodeDepthCursor('after', after);
  return connectionOf(
    await read(first, after),
    (b) => encodeDepthCursor(b.depth, b.id),
    after !== null,
    (b) => b.id,
  );
}

export const RetractionRef: FleetNodeRef<RetractionRow> = fleetNode('Retraction', retractionsByIds, {
  description:
    'The receipt: root, reason, actor, and everything it took down, cancelled or reached, with totals. Needs receipts:read.',
  readable: 'Receipt',
  fields: (t) => ({
    root: t.expose('root_id', { type: BeliefRef, description: 'The belief retracted.' }),
    reason: t.exposeString('reason', { description: 'Why it was retracted.' }),
    actor: t.expose('actor_id', { type: AgentRef, description: 'The agent that retracted it.' }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When the retraction committed.' }),
    beliefs: t.field({
      type: BeliefConnection,
      description: 'Every belief this retraction took down, root first, then in cascade order.',
      args: pageArgs(t),
      resolve: (r, args, ctx) =>
        cascadeOrder(args, (first, after) =>
          fleetRead(ctx, (tx, fleet) => retractedBeliefPage(tx, fleet, r.id, first, after)),
        ),
    }),
    cancelledEffects: t.field({
      type: [EffectRef],
      description: 'PENDING effects this retraction cancelled.',
      resolve: (r, _a, ctx) =>
        fleetRead(ctx, async (tx, fleet) => (await receiptEffects(tx, fleet, r.id)).cancelled.map((e) => e.id)),
    }),
    reversals: t.field({
      type: [ReversalRef],
      description: 'Reversals recorded for executed effects it reached (owed or unreachable).',
      resolve: (r, _a, ctx) =>
        fleetRead(ctx, async (tx, fleet) => (await reversalsOfRetraction(tx, fleet, r.id)).map((x) => x.id)),
    }),
    totals: t.field({
      type: TotalsRef,
      description: 'Counts and money, per currency.',
      resolve: async (r, _a, ctx) => ({
        ...(await fleetRead(ctx, (tx, fleet) => totalsFor(tx, fleet, r.id))),
        retractionId: r.id,
      }),
    }),
  }),
});

const RetractionConnection = countedConnection(RetractionRef, {
  page: 'A page of receipts.',
  edge: 'A receipt and its cursor.',
});

const PreviewRef = builder.objectRef<Preview>('RetractionPreview').implement({
  description: 'What a retraction of root would do, computed without changing anything.',
  fields: (t) => ({
    root: t.expose('rootId', { type: BeliefRef, description: 'The belief that would be retracted.' }),
    beliefs: t.field({
      type: BeliefConnection,
      description: 'Every belief that would fall, root first, then in cascade order.',
      args: pageArgs(t),
      // The default page was computed with the preview; another page reruns the same simulation.
      resolve: (p, args, ctx) =>
        cascadeOrder(args, async (first, after) =>
          first === 50 && after === null
            ? p.beliefs
            : (await previewRetraction(ctx.core, actorOf(ctx), { beliefId: p.rootId, first, after })).beliefs,
        ),
    }),
    survivors: t.expose(
      'survivors',
      ofType([BeliefRef], 'Dependents that would stay ACTIVE because another justification still holds.'),
    ),
    pendingEffects: t.expose('pendingEffects', ofType([EffectRef], 'PENDING effects that would be cancelled.')),
    executingEffects: t.expose(
      'executingEffects',
      ofType(
        [EffectRef],
        'EXECUTING effects that would be marked reached (their reversal is recorded when they complete).',
      ),
    ),
    executedEffects: t.expose(
      'executedEffects',
      ofType([EffectRef], 'EXECUTED effects that would be reached: owed a reversal, or unreachable.'),
    ),
    totals: t.expose('totals', { type: TotalsRef, description: "The receipt's figures, as they would be." }),
  }),
});

builder.queryFields((t) => ({
  previewRetraction: t.field({
    type: PreviewRef,
    authScopes: { scope: 'beliefs:read' },
    description: 'What retracting this belief would do, computed without changing anything.',
    args: { beliefId: t.arg.id({ required: true, description: 'The belief to preview.' }) },
    resolve: (_r, a, ctx) =>
      previewRetraction(ctx.core, actorOf(ctx), { beliefId: parseGid('beliefId', String(a.beliefId), 'Belief') }),
  }),
  retraction: nodeById(t, RetractionRef, 'receipts:read', 'A receipt by id.'),
  retractions: t.field({
    type: RetractionConnection,
    authScopes: { scope: 'receipts:read' },
    description: 'Receipts, newest first.',
    args: pageArgs(t),
    resolve: (_r, a, ctx) => newestFirst(ctx, a, retractionPage),
  }),
}));

builder.mutationField('retractBelief', (t) =>
  t.field({
    type: RetractionRef,
    authScopes: { scope: 'beliefs:retract' },
    description:
      'Retracts a belief and cascades in one transaction. Retracting an already retracted belief returns its original receipt and writes nothing.',
    args: inputArg(t, 'RetractBeliefInput', 'What to retract and why.', 'The retraction.', (f) => ({
      beliefId: f.id({ required: true, description: 'The belief that turned out false.' }),
      reason: f.string({ required: true, description: 'Why (kept on the receipt).' }),
    })),
    resolve: resolveRetractBelief,
  }),
);

/** retractBelief: runs the retraction (src/retraction/retraction.service.ts) and grants its caller the receipt it made. */
async function resolveRetractBelief(_root: unknown, a: { input: { beliefId: string; reason: string } }, ctx: Context) {
  const { retractionId } = await retractBelief(ctx.core, actorOf(ctx), {
    beliefId: parseGid('input.beliefId', String(a.input.beliefId), 'Belief'),
    reason: a.input.reason,
  });
  grantRead(ctx, 'Retraction', retractionId);
  return retractionId;
}
