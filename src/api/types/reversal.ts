import { parseGid } from '../../kernel/ids';
import { type ReversalRow, reversalPage, reversalsByIds } from '../../reversal/reversal.repository';
import { confirmReversal } from '../../reversal/reversal.service';
import { actorOf, builder, grantRead, readRule } from '../builder';
import { enumOf, inputArg } from '../shapes';
import { fleetNodeRef } from '../loaders';
import { countedConnection, newestFirst, pageArgs } from '../pagination';
import { EffectRef } from './effect';
import { MoneyRef, moneyOf } from './money';
import { RetractionRef } from './retraction';

export const ReversalStatusEnum = enumOf<ReversalRow['status']>('ReversalStatus', 'OWED → DISPATCHED → CONFIRMED / FAILED, or UNREACHABLE; VOIDED when a reinstatement took its retraction back before any money moved.', {
  OWED: 'Recorded as owed, not yet sent.',
  DISPATCHED: 'Sent to a provider, no confirmation yet.',
  CONFIRMED: 'A provider confirmed it with a reference this server did not generate.',
  FAILED: 'The provider refused it; reason says why.',
  UNREACHABLE: 'No compensation handler exists for the effect\'s kind.',
  VOIDED: 'No longer owed: a reinstatement took its retraction back before it was sent (it was OWED or UNREACHABLE), or the provider refused one it watched.',
});

export const ReversalRef = fleetNodeRef<ReversalRow>('Reversal', 'reversal', reversalsByIds);

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

const ReversalConnection = countedConnection(ReversalRef, { page: 'A page of reversals.', edge: 'A reversal and its cursor.' });

builder.queryFields((t) => ({
  reversals: t.field({
    type: ReversalConnection, authScopes: { scope: 'receipts:read' }, description: 'Reversals of your fleet, newest first.',
    args: { status: t.arg({ type: ReversalStatusEnum, description: 'Only reversals in this status.' }), ...pageArgs(t) },
    resolve: (_r, a, ctx) => newestFirst(ctx, a, (tx, fleet, first, after) => reversalPage(tx, fleet, { status: a.status ?? null, first, after })),
  }),
}));

builder.mutationFields((t) => ({
  confirmReversal: t.field({
    type: ReversalRef, authScopes: { scope: 'effects:execute' },
    description: 'Records a provider\'s confirmation of a reversal; a CONFIRMED reversal counts toward settled. Only the provider\'s own ' +
      'reference confirms it: a reference RETRACT issued is refused BAD_USER_INPUT (field providerRef), see the providerRef rule in docs/guarantees.md.',
    args: inputArg(t, 'ConfirmReversalInput', 'A provider\'s confirmation.', 'The confirmation.', (f) => ({
      reversalId: f.id({ required: true, description: 'The reversal.' }),
      providerRef: f.string({
        required: true,
        description: 'The provider\'s own reference for the money it moved. Refused when it is, after NFC, trimming whitespace and ' +
          'zero-width characters at both ends and folding A-Z to a-z: any of our global ids (encoded or decoded, e.g. Reversal:12), ' +
          'the id of any row of the fleet, or the idempotency key of any effect or reversal of the fleet (docs/guarantees.md).',
      }),
    })),
    resolve: async (_r, a, ctx) => {
      const r = await confirmReversal(ctx.core, actorOf(ctx), { reversalId: parseGid('input.reversalId', String(a.input.reversalId), 'Reversal'), providerRef: a.input.providerRef });
      grantRead(ctx, 'Reversal', r.id);
      return r;
    },
  }),
}));
