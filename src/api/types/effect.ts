import type { EffectRow } from '../../effect/effect.repository';
import { type Context, builder, readRule } from '../builder';
import { inOrder, loadReversalIdByEffect, loadRows, loadSupportIdsByEffect } from '../loaders';
import { AgentRef } from './agent';
import { BeliefRef } from './belief';
import { MoneyRef, moneyOf } from './money';
import { RetractionRef } from './retraction';
import { ReversalRef } from './reversal';

export const EffectStatusEnum = builder.enumType('EffectStatus', {
  description: 'PENDING → EXECUTING → EXECUTED, or CANCELLED (by a retraction) / FAILED (by its executor).',
  values: {
    PENDING: { description: 'Proposed, not yet taken by an executor.' },
    EXECUTING: { description: 'Taken by an executor; it may already have happened.' },
    EXECUTED: { description: 'Done; the executor reported its reference.' },
    CANCELLED: { description: 'A retraction cancelled it while PENDING: it can never run.' },
    FAILED: { description: 'Its executor reported that it did not happen.' },
  } as const,
});

export const EffectRef = builder.loadableNodeRef('Effect', {
  id: { resolve: (e) => e.id },
  loaderOptions: { cache: false },
  load: async (ids: string[], ctx: Context): Promise<Array<EffectRow | Error>> => inOrder('effect', ids, (await loadRows(ctx, 'effects', ids)) as unknown as EffectRow[]),
});

EffectRef.implement({
  description: 'An action an agent takes on the strength of beliefs. Needs effects:propose, effects:execute or receipts:read.',
  authScopes: (e, ctx) => readRule(ctx, 'Effect', { type: 'Effect', id: e.id }),
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'A registered effect kind, e.g. refund.' }),
    status: t.field({ type: EffectStatusEnum, description: 'Where the effect stands.', resolve: (e) => e.status }),
    amount: t.field({ type: MoneyRef, nullable: true, description: 'Money moved by this effect, if any.', resolve: (e) => moneyOf(e) }),
    payload: t.field({ type: 'JSON', nullable: true, description: 'What the executor needs.', resolve: (e) => e.payload ?? null }),
    idempotencyKey: t.string({ description: 'The proposer\'s key; proposing again with it returns this effect.', resolve: (e) => e.idempotency_key }),
    supportedBy: t.loadableList({
      type: BeliefRef,
      description: 'The beliefs this effect rests on.',
      load: (ids: string[], ctx) => loadSupportIdsByEffect(ctx, ids),
      resolve: (e) => e.id,
    }),
    proposedBy: t.field({ type: AgentRef, description: 'The agent that proposed it.', resolve: (e) => e.proposed_by }),
    externalRef: t.string({ nullable: true, description: 'Reference the executor reported when the effect ran.', resolve: (e) => e.external_ref }),
    failureReason: t.string({ nullable: true, description: 'Why its executor failed it.', resolve: (e) => e.failure_reason }),
    reversal: t.loadable({
      type: ReversalRef,
      nullable: true,
      description: 'The reversal recorded when a supporting belief was retracted after execution.',
      load: (ids: string[], ctx) => loadReversalIdByEffect(ctx, ids),
      resolve: (e) => e.id,
    }),
    reachedBy: t.field({ type: RetractionRef, nullable: true, description: 'The retraction that reached it while it was EXECUTING.', resolve: (e) => e.reached_by }),
    cancelledBy: t.field({ type: RetractionRef, nullable: true, description: 'The retraction that cancelled this effect while it was PENDING.', resolve: (e) => e.cancelled_by }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was proposed.', resolve: (e) => e.created_at }),
    executedAt: t.field({ type: 'DateTime', nullable: true, description: 'When it was reported EXECUTED.', resolve: (e) => e.executed_at }),
    cancelledAt: t.field({ type: 'DateTime', nullable: true, description: 'When a retraction cancelled it.', resolve: (e) => e.cancelled_at }),
  }),
});

export const EffectConnection = builder.connectionObject(
  {
    type: EffectRef,
    name: 'EffectConnection',
    description: 'A page of effects.',
    fields: (t) => ({ totalCount: t.int({ description: 'How many there are in all.', resolve: (c) => (c as unknown as { totalCount: number }).totalCount }) }),
  },
  { name: 'EffectEdge', description: 'An effect and its cursor.' },
);

export const EffectKindRef = builder.simpleObject('EffectKind', {
  description: 'A registry entry for a kind of effect.',
  fields: (t) => ({
    kind: t.string({ description: 'The kind\'s name.' }),
    reversible: t.boolean({ description: 'False when no compensation handler is registered: executed effects of this kind are named UNREACHABLE when reached.' }),
  }),
});

export const EffectProposedRef = builder.simpleObject('EffectProposed', {
  description: 'The effect, PENDING (or as it stands, when the key was used before).',
  fields: (t) => ({ effect: t.field({ type: EffectRef, description: 'The effect.' }) }),
});
