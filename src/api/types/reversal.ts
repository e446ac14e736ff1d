import type { ReversalRow } from '../../reversal/reversal.service';
import { type Context, builder, readRule } from '../builder';
import { inOrder, loadRows } from '../loaders';
import { EffectRef } from './effect';
import { MoneyRef, moneyOf } from './money';
import { RetractionRef } from './retraction';

export const ReversalStatusEnum = builder.enumType('ReversalStatus', {
  description: 'OWED → DISPATCHED → CONFIRMED / FAILED, or UNREACHABLE; VOIDED when a reinstatement took its retraction back before any money moved.',
  values: {
    OWED: { description: 'Recorded as owed, not yet sent.' },
    DISPATCHED: { description: 'Sent to a provider, no confirmation yet.' },
    CONFIRMED: { description: 'A provider confirmed it with a reference this server did not generate.' },
    FAILED: { description: 'The provider refused it; reason says why.' },
    UNREACHABLE: { description: 'No compensation handler exists for the effect\'s kind.' },
    VOIDED: { description: 'No longer owed: a reinstatement took its retraction back before it was sent (it was OWED or UNREACHABLE), or the provider refused one it watched.' },
  } as const,
});

export const ReversalRef = builder.loadableNodeRef('Reversal', {
  id: { resolve: (r) => r.id },
  loaderOptions: { cache: false },
  load: async (ids: string[], ctx: Context): Promise<Array<ReversalRow | Error>> => inOrder('reversal', ids, (await loadRows(ctx, 'reversals', ids)) as unknown as ReversalRow[]),
});

ReversalRef.implement({
  description: 'The compensation owed for an EXECUTED effect whose support was retracted. Needs receipts:read.',
  authScopes: (r, ctx) => readRule(ctx, 'Receipt', { type: 'Reversal', id: r.id }),
  fields: (t) => ({
    effect: t.field({ type: EffectRef, description: 'The executed effect being reversed.', resolve: (r) => r.effect_id }),
    retraction: t.field({ type: RetractionRef, description: 'The retraction that reached the effect.', resolve: (r) => r.retraction_id }),
    status: t.field({ type: ReversalStatusEnum, description: 'Where the reversal stands.', resolve: (r) => r.status }),
    idempotencyKey: t.string({
      description: 'Derived deterministically from the effect\'s idempotency key; the same effect always yields the same key.',
      resolve: (r) => r.idempotency_key,
    }),
    amount: t.field({ type: MoneyRef, nullable: true, description: 'The money to be returned.', resolve: (r) => moneyOf(r) }),
    reason: t.string({ nullable: true, description: 'Why it failed or is unreachable.', resolve: (r) => r.reason }),
    providerRef: t.string({ nullable: true, description: 'Only ever set from a provider\'s confirmation.', resolve: (r) => r.provider_ref }),
    attempts: t.int({ description: 'How many times a dispatcher has sent it.', resolve: (r) => r.attempts }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was recorded.', resolve: (r) => r.created_at }),
    confirmedAt: t.field({ type: 'DateTime', nullable: true, description: 'When the provider confirmed it.', resolve: (r) => r.confirmed_at }),
  }),
});

export const ReversalConnection = builder.connectionObject(
  {
    type: ReversalRef,
    name: 'ReversalConnection',
    description: 'A page of reversals.',
    fields: (t) => ({ totalCount: t.int({ description: 'How many there are in all.', resolve: (c) => (c as unknown as { totalCount: number }).totalCount }) }),
  },
  { name: 'ReversalEdge', description: 'A reversal and its cursor.' },
);
