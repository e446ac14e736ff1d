import { encodeCursor, decodeCursor } from '../../kernel/cursor';
import { parseGid } from '../../kernel/ids';
import {
  type ReinstatementRow,
  type ReinstatementTotals,
  reinstatedBeliefPage,
  reinstatementPage,
  reinstatementTotals,
  reinstatementsByIds,
} from '../../reinstatement/reinstatement.repository';
import { type MoneyLineRow, moneyLines } from '../../reversal/money-line.repository';
import { reinstateRetraction, restoreEffect } from '../../reinstatement/reinstatement.service';
import { type Context, actorOf, builder, grantRead, readRule } from '../builder';
import { carrier, inputArg, typed, typedUnion, orNull } from '../shapes';
import { decodeIdCursor, encodeIdCursor, pageOf } from '../../kernel/page';
import { type FleetNodeRef, fleetNode, fleetRead, nodeById } from '../loaders';
import { connectionOf, countedConnection, firstArg, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { BeliefConnection } from './belief';
import { ContradictionRef } from './contradiction';
import { EffectRef } from './effect';
import { amountField, figureFields } from './money';
import { RetractionRef } from './retraction';
import { ReversalRef } from './reversal';
import { MoneyLineEnum, ReinstatementStatusEnum, ReversalStatusEnum } from './enums';

const MoneyLineRef = builder.objectRef<MoneyLineRow>('ReinstatementMoneyLine').implement({
  description: 'One reversal a reinstatement named, with its amount. Needs receipts:read.',
  authScopes: (l, ctx) => readRule(ctx, 'Receipt', { type: 'Reinstatement', id: l.reinstatement_id }),
  fields: (t) => ({
    reversal: t.expose('reversal_id', { type: ReversalRef, description: 'The reversal.' }),
    effect: t.expose('effect_id', { type: EffectRef, description: 'The executed effect it reverses.' }),
    line: t.expose('line', { type: MoneyLineEnum, description: 'What the reinstatement says of it.' }),
    priorStatus: t.expose('prior_status', {
      type: ReversalStatusEnum,
      description: "The reversal's status when the reinstatement ran.",
    }),
    amount: amountField(t, 'Its amount.'),
    reexecutionKey: t.exposeString('reexecution_key', {
      nullable: true,
      description:
        "For REEXECUTION_OWED: the idempotency key the re-execution is owed under, derived from the reversal's key (reexecution: + key).",
    }),
    outcome: t.exposeString('outcome', {
      nullable: true,
      description: "For a reversal that was in flight: the provider's answer since (CONFIRMED or FAILED).",
    }),
  }),
});

export const ReinstatementTotalsRef = builder
  .objectRef<ReinstatementTotals & { reinstatementId: string }>('ReinstatementTotals')
  .implement({
    description:
      "A reinstatement's figures, from its own rows; every currency a line carries appears in each sum (0 when none). Needs receipts:read.",
    authScopes: (x, ctx) => readRule(ctx, 'Receipt', { type: 'Reinstatement', id: x.reinstatementId }),
    fields: (t) =>
      figureFields(
        t,
        {
          beliefsReinstated: 'Beliefs brought back, the root included.',
          contradictionsRaised: 'Beliefs that would have come back but whose claim holds another ACTIVE belief.',
          reversalsVoided: 'Reversals VOIDED.',
          reversalsInFlight: 'Reversals in flight, awaiting the provider.',
          reexecutionsOwed: 'Reversals CONFIRMED before the reinstatement: re-execution owed.',
          effectsRestorable: 'Effects the retraction cancelled whose supports all stand again.',
          effectsRestored: 'Of those, restored (PENDING again) by restoreEffect.',
        },
        {
          voided: 'Money that no longer needs to move, per currency.',
          inFlight: 'Money in flight when the reinstatement ran, per currency.',
          reexecutionOwed: 'Money that came back and is owed again, per currency.',
        },
      ),
  });

export const ReinstatementRef: FleetNodeRef<ReinstatementRow> = fleetNode('Reinstatement', reinstatementsByIds, {
  description:
    'The receipt of a reinstatement: a retraction taken back, what came back, and the money named. Needs receipts:read, as a Retraction does.',
  readable: 'Receipt',
  fields: (t) => ({
    retraction: t.expose('retraction_id', { type: RetractionRef, description: 'The retraction taken back.' }),
    status: t.expose('status', {
      type: ReinstatementStatusEnum,
      description: 'REINSTATED, or BLOCKED by contradiction.',
    }),
    reason: t.exposeString('reason', { description: 'Why the retraction was wrong.' }),
    actor: t.expose('actor_id', { type: AgentRef, description: 'The agent that reinstated it.' }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was asked for.' }),
    completedAt: t.expose('completed_at', orNull('DateTime', 'When the beliefs came back (null while BLOCKED).')),
    contradiction: t.expose(
      'contradiction_id',
      orNull(
        ContradictionRef,
        "While BLOCKED (or if it ever was): the contradiction between the root and its claim's ACTIVE belief.",
      ),
    ),
    beliefs: t.field({
      type: BeliefConnection,
      description:
        'Every belief brought back, root first, then in reverse-cascade order (by the level at which a justification held again).',
      args: pageArgs(t),
      resolve: async (r, args, ctx) => {
        const first = firstArg(args.first);
        const after = args.after == null ? 0 : Number(decodeCursor('after', args.after, 'p1', ['int'])[0]);
        const rows = await fleetRead(ctx, (tx) =>
          reinstatedBeliefPage(tx, ctx.agent!.fleet_id, r.id, first + 1, after),
        );
        const cursorOf = (x: { pos: number }) => encodeCursor('p1', [x.pos]);
        return connectionOf(pageOf(rows, first, cursorOf, r.belief_ids.length), cursorOf, after > 0, (x) => x.id);
      },
    }),
    contradictions: t.expose('contradiction_ids', {
      type: [ContradictionRef],
      description: "Contradictions it raised: the root's, or a returning belief's whose claim was taken.",
    }),
    moneyLines: t.field({
      type: [MoneyLineRef],
      description: 'Every reversal it named, by reversal id.',
      resolve: (r, _a, ctx) => fleetRead(ctx, (tx) => moneyLines(tx, ctx.agent!.fleet_id, r.id)),
    }),
    restorableEffects: t.expose('restorable_effect_ids', {
      type: [EffectRef],
      description: 'Effects the retraction cancelled whose supports all stand again: restoreEffect re-queues one.',
    }),
    totals: t.field({
      type: ReinstatementTotalsRef,
      description: 'Counts and money, per currency.',
      resolve: async (r, _a, ctx) => ({
        ...(await fleetRead(ctx, (tx) => reinstatementTotals(tx, ctx.agent!.fleet_id, r.id))),
        reinstatementId: r.id,
      }),
    }),
  }),
});

const ReinstatementConnection = countedConnection(ReinstatementRef, {
  page: 'A page of reinstatement receipts.',
  edge: 'A reinstatement and its cursor.',
});

builder.objectField(RetractionRef, 'reinstatement', (t) =>
  t.field({
    type: ReinstatementRef,
    nullable: true,
    description: 'The reinstatement that took this retraction back, if one was asked for.',
    resolve: async (r, _a, ctx) =>
      (
        await fleetRead(ctx, (tx) =>
          reinstatementPage(tx, ctx.agent!.fleet_id, { retractionId: r.id, first: 1, before: null }),
        )
      )[0]?.id ?? null,
  }),
);

builder.queryFields((t) => ({
  reinstatement: nodeById(t, ReinstatementRef, 'receipts:read', 'A reinstatement receipt by id.'),
  reinstatements: t.field({
    type: ReinstatementConnection,
    authScopes: { scope: 'receipts:read' },
    description: 'Reinstatement receipts, newest first.',
    args: pageArgs(t),
    resolve: async (_r, a, ctx) => {
      const first = firstArg(a.first);
      const before = decodeIdCursor('after', a.after);
      const fleet = ctx.agent!.fleet_id;
      const { rows, total } = await fleetRead(ctx, async (tx) => ({
        rows: await reinstatementPage(tx, fleet, { first: first + 1, before }),
        total: (await reinstatementPage(tx, fleet, { first: null, before: null })).length,
      }));
      return connectionOf(
        pageOf(rows, first, (r) => encodeIdCursor(r.id), total),
        (r) => encodeIdCursor(r.id),
        before !== null,
      );
    },
  }),
}));

const ReinstatedRef = carrier(
  'RetractionReinstated',
  'The retraction was taken back: its root and what rested on it came back.',
  'reinstatement',
  () => ReinstatementRef,
  'The receipt.',
);
const BlockedRef = builder.simpleObject('ReinstatementBlocked', {
  description:
    "The root's claim holds another ACTIVE belief: a contradiction was raised and nothing else changed until it is adjudicated.",
  fields: (t) => ({
    reinstatement: t.field({ type: ReinstatementRef, description: 'The receipt (status BLOCKED).' }),
    contradiction: t.field({
      type: ContradictionRef,
      description: 'The contradiction between the retracted root and the ACTIVE belief.',
    }),
  }),
});
const ReinstateResultRef = typedUnion('ReinstateRetractionResult', 'What reinstateRetraction did.', [
  ReinstatedRef,
  BlockedRef,
]);

builder.mutationFields((t) => ({
  reinstateRetraction: t.field({
    type: ReinstateResultRef,
    authScopes: { scope: 'beliefs:retract' },
    description:
      'Takes a retraction back in one transaction: its root and every belief that fell in it and is justified again return ACTIVE; ' +
      'reversals not sent are VOIDED, confirmed ones named re-execution owed. Asking again returns the first receipt and writes nothing.',
    args: inputArg(
      t,
      'ReinstateRetractionInput',
      'Which retraction proved wrong and why.',
      'The reinstatement.',
      (f) => ({
        retractionId: f.id({ required: true, description: 'The retraction to take back.' }),
        reason: f.string({ required: true, description: 'Why it was wrong (kept on the receipt).' }),
      }),
    ),
    resolve: resolveReinstateRetraction,
  }),
  restoreEffect: t.field({
    type: EffectRef,
    authScopes: { scope: 'effects:propose' },
    description:
      'Re-queues an effect a reinstated retraction had cancelled (listed in restorableEffects) as PENDING under its original key, when every support is ACTIVE. Restoring it again returns it unchanged.',
    args: { effectId: t.arg.id({ required: true, description: 'The cancelled effect.' }) },
    resolve: resolveRestoreEffect,
  }),
}));

/** reinstateRetraction: the reinstatement receipt, or the contradiction that blocked it. */
async function resolveReinstateRetraction(
  _root: unknown,
  a: { input: { retractionId: string; reason: string } },
  ctx: Context,
) {
  const r = await reinstateRetraction(ctx.core, actorOf(ctx), {
    retractionId: parseGid('input.retractionId', String(a.input.retractionId), 'Retraction'),
    reason: a.input.reason,
  });
  grantRead(ctx, 'Reinstatement', r.reinstatementId);
  if (r.kind === 'reinstated') return typed('RetractionReinstated', { reinstatement: r.reinstatementId });
  grantRead(ctx, 'Contradiction', r.contradictionId);
  return typed('ReinstatementBlocked', { reinstatement: r.reinstatementId, contradiction: r.contradictionId });
}

/** restoreEffect: the effect PENDING again. */
async function resolveRestoreEffect(_root: unknown, a: { effectId: string }, ctx: Context) {
  const e = await restoreEffect(ctx.core, actorOf(ctx), {
    effectId: parseGid('effectId', String(a.effectId), 'Effect'),
  });
  grantRead(ctx, 'Effect', e.id);
  return e;
}
