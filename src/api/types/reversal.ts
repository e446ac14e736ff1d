import { type ReversalRow, reversalPage, reversalsByIds } from '../../reversal/reversal.repository';
import { confirmReversal } from '../../reversal/reversal.service';
import { builder } from '../builder';
import { inputArg, writes, orNull } from '../shapes';
import { type FleetNodeRef, fleetNode } from '../loaders';
import { countedConnection, newestFirst, pageArgs } from '../pagination';
import { EffectRef } from './effect';
import { amountField } from './money';
import { RetractionRef } from './retraction';
import { ReversalStatusEnum } from './enums';

export const ReversalRef: FleetNodeRef<ReversalRow> = fleetNode('Reversal', reversalsByIds, {
  description: 'The compensation owed for an EXECUTED effect whose support was retracted. Needs receipts:read.',
  readable: 'Receipt',
  fields: (t) => ({
    effect: t.expose('effect_id', { type: EffectRef, description: 'The executed effect being reversed.' }),
    amount: amountField(t, 'The money to be returned.'),
    idempotencyKey: t.exposeString('idempotency_key', {
      description:
        "Derived deterministically from the effect's idempotency key; the same effect always yields the same key.",
    }),
    retraction: t.expose('retraction_id', {
      type: RetractionRef,
      description: 'The retraction that reached the effect.',
    }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was recorded.' }),
    status: t.expose('status', { type: ReversalStatusEnum, description: 'Where the reversal stands.' }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why it failed or is unreachable.' }),
    providerRef: t.exposeString('provider_ref', {
      nullable: true,
      description: "Only ever set from a provider's confirmation.",
    }),
    attempts: t.exposeInt('attempts', { description: 'How many times a dispatcher has sent it.' }),
    confirmedAt: t.expose('confirmed_at', orNull('DateTime', 'When the provider confirmed it.')),
  }),
});

const ReversalConnection = countedConnection(ReversalRef, {
  page: 'A page of reversals.',
  edge: 'A reversal and its cursor.',
});

builder.queryField('reversals', (t) =>
  t.field({
    type: ReversalConnection,
    authScopes: { scope: 'receipts:read' },
    description: 'Reversals of your fleet, newest first.',
    args: {
      status: t.arg({ type: ReversalStatusEnum, description: 'Only reversals in this status.' }),
      ...pageArgs(t),
    },
    resolve: (_r, a, ctx) =>
      newestFirst(ctx, a, (tx, fleet, first, after) =>
        reversalPage(tx, fleet, { status: a.status ?? null, first, after }),
      ),
  }),
);

builder.mutationField('confirmReversal', (t) =>
  t.field({
    type: ReversalRef,
    authScopes: { scope: 'effects:execute' },
    description:
      "Records a provider's confirmation of a reversal, which then counts toward settled. Only the provider's own reference confirms it.",
    args: inputArg(t, 'ConfirmReversalInput', "A provider's confirmation.", 'The confirmation.', (f) => ({
      reversalId: f.id({ required: true, description: 'The reversal.' }),
      providerRef: f.string({
        required: true,
        description:
          "The provider's own reference for the money it moved. A reference RETRACT issued is refused BAD_USER_INPUT (the providerRef rule, " +
          'docs/guarantees.md): one that is, after NFC, trimming whitespace and zero-width characters at both ends and folding A-Z to a-z, ' +
          'any of our global ids (encoded or decoded, e.g. Reversal:12), the id of any row of the fleet, or the idempotency key of any effect or reversal of the fleet.',
      }),
    })),
    resolve: resolveConfirmReversal,
  }),
);

/** confirmReversal: the reversal CONFIRMED under the provider's reference. */
const resolveConfirmReversal = writes('Reversal', confirmReversal, { reversalId: 'Reversal' });
