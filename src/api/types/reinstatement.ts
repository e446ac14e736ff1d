import { encodeCursor, decodeCursor } from '../../kernel/cursor';
import { parseGid } from '../../kernel/ids';
import {
  type MoneyLineRow, type ReinstatementRow, type ReinstatementTotals,
  moneyLines, reinstatedBeliefPage, reinstatementPage, reinstatementTotals, reinstatementsByIds,
} from '../../reinstatement/reinstatement.repository';
import { reinstateRetraction, restoreEffect } from '../../reinstatement/reinstatement.service';
import { type Context, actorOf, builder, grantRead, readRule } from '../builder';
import { carrier, enumOf, inputArg, typedUnion } from '../shapes';
import { decodeIdCursor, encodeIdCursor, pageOf } from '../../kernel/page';
import { fleetNodeRef, fleetRead, nodeById } from '../loaders';
import { connectionOf, countedConnection, firstArg, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { BeliefConnection } from './belief';
import { ContradictionRef } from './contradiction';
import { EffectRef } from './effect';
import { MoneyRef, figureFields, moneyOf } from './money';
import { RetractionRef } from './retraction';
import { ReversalRef, ReversalStatusEnum } from './reversal';

const ReinstatementStatusEnum = enumOf<ReinstatementRow['status']>('ReinstatementStatus', 'Whether a reinstatement brought its retraction back.', {
  REINSTATED: 'The root and what rested on it came back (see beliefs).',
  BLOCKED: 'The root\'s claim holds another ACTIVE belief: a contradiction was raised and nothing else changed. ACCEPT_PROPOSED on it completes the reinstatement; KEEP_EXISTING leaves it blocked.',
});

const MoneyLineEnum = enumOf<MoneyLineRow['line']>('ReinstatementMoneyLineKind', 'What a reinstatement says about one reversal of its retraction.', {
  VOIDED: 'No longer owed: it was OWED and never sent, or UNREACHABLE (or the provider refused one that was in flight).',
  IN_FLIGHT: 'It was DISPATCHED (or FAILED) when the reinstatement ran: the provider\'s answer decides; a confirmation makes it re-execution owed.',
  REEXECUTION_OWED: 'It was CONFIRMED: the money came back and should not have. Owed again under reexecutionKey; RETRACT never executes it.',
});

const MoneyLineRef = builder.objectRef<MoneyLineRow>('ReinstatementMoneyLine').implement({
  description: 'One reversal a reinstatement named, with its amount. Needs receipts:read.',
  authScopes: (l, ctx) => readRule(ctx, 'Receipt', { type: 'Reinstatement', id: l.reinstatement_id }),
  fields: (t) => ({
    reversal: t.field({ type: ReversalRef, description: 'The reversal.', resolve: (l) => l.reversal_id }),
    effect: t.field({ type: EffectRef, description: 'The executed effect it reverses.', resolve: (l) => l.effect_id }),
    line: t.field({ type: MoneyLineEnum, description: 'What the reinstatement says of it.', resolve: (l) => l.line }),
    priorStatus: t.field({ type: ReversalStatusEnum, description: 'The reversal\'s status when the reinstatement ran.', resolve: (l) => l.prior_status }),
    amount: t.field({ type: MoneyRef, nullable: true, description: 'Its amount.', resolve: (l) => moneyOf(l) }),
    reexecutionKey: t.string({
      nullable: true,
      description: 'For REEXECUTION_OWED: the idempotency key the re-execution is owed under, derived from the reversal\'s key (reexecution: + key).',
      resolve: (l) => l.reexecution_key,
    }),
    outcome: t.string({ nullable: true, description: 'For a reversal that was in flight: the provider\'s answer since (CONFIRMED or FAILED).', resolve: (l) => l.outcome }),
  }),
});

export const ReinstatementTotalsRef = builder.objectRef<ReinstatementTotals & { reinstatementId: string }>('ReinstatementTotals').implement({
  description: 'A reinstatement\'s figures, from its own rows; every currency a line carries appears in each sum (0 when none). Needs receipts:read.',
  authScopes: (x, ctx) => readRule(ctx, 'Receipt', { type: 'Reinstatement', id: x.reinstatementId }),
  fields: (t) => figureFields(t, {
    beliefsReinstated: 'Beliefs brought back, the root included.',
    contradictionsRaised: 'Beliefs that would have come back but whose claim holds another ACTIVE belief.',
    reversalsVoided: 'Reversals VOIDED.',
    reversalsInFlight: 'Reversals in flight, awaiting the provider.',
    reexecutionsOwed: 'Reversals CONFIRMED before the reinstatement: re-execution owed.',
    effectsRestorable: 'Effects the retraction cancelled whose supports all stand again.',
    effectsRestored: 'Of those, restored (PENDING again) by restoreEffect.',
  }, {
    voided: 'Money that no longer needs to move, per currency.',
    inFlight: 'Money in flight when the reinstatement ran, per currency.',
    reexecutionOwed: 'Money that came back and is owed again, per currency.',
  }),
});

export const ReinstatementRef = fleetNodeRef<ReinstatementRow>('Reinstatement', 'reinstatement', reinstatementsByIds);

ReinstatementRef.implement({
  description: 'The receipt of a reinstatement: a retraction taken back, what came back, and the money named. Needs receipts:read, as a Retraction does.',
  authScopes: (r, ctx) => readRule(ctx, 'Receipt', { type: 'Reinstatement', id: r.id }),
  fields: (t) => ({
    retraction: t.field({ type: RetractionRef, description: 'The retraction taken back.', resolve: (r) => r.retraction_id }),
    status: t.field({ type: ReinstatementStatusEnum, description: 'REINSTATED, or BLOCKED by contradiction.', resolve: (r) => r.status }),
    reason: t.exposeString('reason', { description: 'Why the retraction was wrong.' }),
    actor: t.field({ type: AgentRef, description: 'The agent that reinstated it.', resolve: (r) => r.actor_id }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was asked for.', resolve: (r) => r.created_at }),
    completedAt: t.field({ type: 'DateTime', nullable: true, description: 'When the beliefs came back (null while BLOCKED).', resolve: (r) => r.completed_at }),
    contradiction: t.field({ type: ContradictionRef, nullable: true, description: 'While BLOCKED (or if it ever was): the contradiction between the root and its claim\'s ACTIVE belief.', resolve: (r) => r.contradiction_id }),
    beliefs: t.field({
      type: BeliefConnection,
      description: 'Every belief brought back, root first, then in reverse-cascade order (by the level at which a justification held again).',
      args: pageArgs(t),
      resolve: async (r, args, ctx) => {
        const first = firstArg(args.first);
        const after = args.after == null ? 0 : Number(decodeCursor('after', args.after, 'p1', ['int'])[0]);
        const rows = await fleetRead(ctx, (tx) => reinstatedBeliefPage(tx, ctx.agent!.fleet_id, r.id, first + 1, after));
        const cursorOf = (x: { pos: number }) => encodeCursor('p1', [x.pos]);
        return connectionOf(pageOf(rows, first, cursorOf, r.belief_ids.length), cursorOf, after > 0, (x) => x.id) as never;
      },
    }),
    contradictions: t.field({ type: [ContradictionRef], description: 'Contradictions it raised: the root\'s, or a returning belief\'s whose claim was taken.', resolve: (r) => r.contradiction_ids }),
    moneyLines: t.field({ type: [MoneyLineRef], description: 'Every reversal it named, by reversal id.', resolve: (r, _a, ctx) => fleetRead(ctx, (tx) => moneyLines(tx, ctx.agent!.fleet_id, r.id)) }),
    restorableEffects: t.field({ type: [EffectRef], description: 'Effects the retraction cancelled whose supports all stand again: restoreEffect re-queues one.', resolve: (r) => r.restorable_effect_ids }),
    totals: t.field({
      type: ReinstatementTotalsRef, description: 'Counts and money, per currency.',
      resolve: async (r, _a, ctx) => ({ ...(await fleetRead(ctx, (tx) => reinstatementTotals(tx, ctx.agent!.fleet_id, r.id))), reinstatementId: r.id }),
    }),
  }),
});

const ReinstatementConnection = countedConnection(ReinstatementRef, { page: 'A page of reinstatement receipts.', edge: 'A reinstatement and its cursor.' });

builder.objectField(RetractionRef, 'reinstatement', (t) =>
  t.field({
    type: ReinstatementRef, nullable: true, description: 'The reinstatement that took this retraction back, if one was asked for.',
    resolve: async (r, _a, ctx) => (await fleetRead(ctx, (tx) => reinstatementPage(tx, ctx.agent!.fleet_id, { retractionId: r.id, first: 1, before: null })))[0]?.id ?? null,
  }));

builder.queryFields((t) => ({
  reinstatement: nodeById(t, ReinstatementRef, 'receipts:read', 'A reinstatement receipt by id.'),
  reinstatements: t.field({
    type: ReinstatementConnection, authScopes: { scope: 'receipts:read' }, description: 'Reinstatement receipts, newest first.',
    args: pageArgs(t),
    resolve: async (_r, a, ctx) => {
      const first = firstArg(a.first);
      const before = decodeIdCursor('after', a.after);
      const fleet = ctx.agent!.fleet_id;
      const { rows, total } = await fleetRead(ctx, async (tx) => ({
        rows: await reinstatementPage(tx, fleet, { first: first + 1, before }),
        total: (await reinstatementPage(tx, fleet, { first: null, before: null })).length,
      }));
      return connectionOf(pageOf(rows, first, (r) => encodeIdCursor(r.id), total), (r) => encodeIdCursor(r.id), before !== null) as never;
    },
  }),
}));

const ReinstatedRef = carrier('RetractionReinstated', 'The retraction was taken back: its root and what rested on it came back.', 'reinstatement', () => ReinstatementRef, 'The receipt.');
const BlockedRef = builder.simpleObject('ReinstatementBlocked', {
  description: 'The root\'s claim holds another ACTIVE belief: a contradiction was raised and nothing else changed until it is adjudicated.',
  fields: (t) => ({
    reinstatement: t.field({ type: ReinstatementRef, description: 'The receipt (status BLOCKED).' }),
    contradiction: t.field({ type: ContradictionRef, description: 'The contradiction between the retracted root and the ACTIVE belief.' }),
  }),
});
const ReinstateResultRef = typedUnion('ReinstateRetractionResult', 'What reinstateRetraction did.', [ReinstatedRef, BlockedRef]);

builder.mutationFields((t) => ({
  reinstateRetraction: t.field({
    type: ReinstateResultRef, authScopes: { scope: 'beliefs:retract' },
    description: 'Takes a retraction back in one transaction: its root and every belief that fell in it and is justified again return ACTIVE; ' +
      'reversals not sent are VOIDED, confirmed ones named re-execution owed. Asking again returns the first receipt and writes nothing.',
    args: inputArg(t, 'ReinstateRetractionInput', 'Which retraction proved wrong and why.', 'The reinstatement.', (f) => ({
      retractionId: f.id({ required: true, description: 'The retraction to take back.' }),
      reason: f.string({ required: true, description: 'Why it was wrong (kept on the receipt).' }),
    })),
    resolve: async (_r, a, ctx) => {
      const r = await reinstateRetraction(ctx.core, actorOf(ctx), { retractionId: parseGid('input.retractionId', String(a.input.retractionId), 'Retraction'), reason: a.input.reason });
      grantRead(ctx, 'Reinstatement', r.reinstatementId);
      if (r.kind === 'reinstated') return { __typename: 'RetractionReinstated', reinstatement: r.reinstatementId } as never;
      grantRead(ctx, 'Contradiction', r.contradictionId);
      return { __typename: 'ReinstatementBlocked', reinstatement: r.reinstatementId, contradiction: r.contradictionId } as never;
    },
  }),
  restoreEffect: t.field({
    type: EffectRef, authScopes: { scope: 'effects:propose' },
    description: 'Re-queues an effect a reinstated retraction had cancelled (listed in restorableEffects) as PENDING under its original key, when every support is ACTIVE. Restoring it again returns it unchanged.',
    args: { effectId: t.arg.id({ required: true, description: 'The cancelled effect.' }) },
    resolve: async (_r, a, ctx) => {
      const e = await restoreEffect(ctx.core, actorOf(ctx), { effectId: parseGid('effectId', String(a.effectId), 'Effect') });
      grantRead(ctx, 'Effect', e.id);
      return e;
    },
  }),
}));
