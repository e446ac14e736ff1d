import { sql } from 'kysely';
import { type RetractionRow, retractedBeliefPage, totalsFor } from '../../retraction/retraction.repository';
import { type Preview, previewRetraction } from '../../retraction/retraction.service';
import { type Context, actorOf, builder, readRule } from '../builder';
import { fleetRead, inOrder, loadRows } from '../loaders';
import { firstArg } from '../pagination';
import { decodeDepthCursor, encodeDepthCursor } from '../../retraction/retraction.repository';
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

function beliefPageConnection(page: Awaited<ReturnType<typeof retractedBeliefPage>>, hasPrevious: boolean) {
  const edges = page.items.map((b) => ({ cursor: encodeDepthCursor(b.depth, b.id), node: b.id }));
  return {
    edges,
    pageInfo: { hasNextPage: page.hasNextPage, hasPreviousPage: hasPrevious, startCursor: edges[0]?.cursor ?? null, endCursor: page.endCursor },
    totalCount: page.totalCount,
  };
}

export const RetractionRef = builder.loadableNodeRef('Retraction', {
  id: { resolve: (r) => r.id },
  loaderOptions: { cache: false },
  load: async (ids: string[], ctx: Context): Promise<Array<RetractionRow | Error>> => inOrder('retraction', ids, (await loadRows(ctx, 'retractions', ids)) as unknown as RetractionRow[]),
});

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
      args: { first: t.arg.int({ description: 'Page size, at most 500 (default 50).' }), after: t.arg.string({ description: 'A cursor from this connection.' }) },
      resolve: async (r, args, ctx) => {
        const first = firstArg(args.first);
        const after = depthAfter(args.after);
        const page = await fleetRead(ctx, (tx) => retractedBeliefPage(tx, r.id, first, after));
        return beliefPageConnection(page, after !== null) as never;
      },
    }),
    cancelledEffects: t.field({
      type: [EffectRef],
      description: 'PENDING effects this retraction cancelled.',
      resolve: (r, _a, ctx) =>
        fleetRead(ctx, async (tx) => (await sql<{ id: string }>`SELECT id::text FROM effects WHERE cancelled_by = ${r.id} ORDER BY effects.id`.execute(tx)).rows.map((x) => x.id)),
    }),
    reversals: t.field({
      type: [ReversalRef],
      description: 'Reversals recorded for executed effects it reached (owed or unreachable).',
      resolve: (r, _a, ctx) =>
        fleetRead(ctx, async (tx) => (await sql<{ id: string }>`SELECT id::text FROM reversals WHERE retraction_id = ${r.id} ORDER BY reversals.id`.execute(tx)).rows.map((x) => x.id)),
    }),
    totals: t.field({ type: TotalsRef, description: 'Counts and money, per currency.', resolve: async (r, _a, ctx) => ({ ...(await fleetRead(ctx, (tx) => totalsFor(tx, r.id))), retractionId: r.id }) }),
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
      args: { first: t.arg.int({ description: 'Page size, at most 500 (default 50).' }), after: t.arg.string({ description: 'A cursor from this connection.' }) },
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
